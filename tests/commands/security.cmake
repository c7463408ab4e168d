# Command tests: Security: keys, TLS, limits, the attack probes.
# Included from tests/CMakeLists.txt (vlcache_command_test, ${F}, ${B} are defined there).

# Two pipelines on one node: each gets exactly the tokens it gets alone.
vlcache_command_test(security.two_pipelines_on_one_node_keep_apart
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/remote_two_pipelines_test.sh $<TARGET_FILE:vlcache> ${VLCACHE_SAMPLE_VIDEO}
  EXPECT "A's 60 frames match A alone"
  PROPERTIES TIMEOUT 180)
# An empty --host is every interface: refused without TLS like any other.
vlcache_command_test(security.node_on_every_interface_needs_tls EXIT 1
  COMMAND /bin/sh -c "exec $<TARGET_FILE:vlcache> node --role encoder --listen 5613 --host '' --model tiny"
  EXPECT "error: --host: '' \\(every interface\\) is beyond loopback without TLS")
# The attack run's probes against the ingest (issue: streams owned by their
# camera, slots released, limits before decoding, bounded logs, names).
vlcache_command_test(security.ingest_survives_the_attack_probes
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/ingest_attacks_test.sh $<TARGET_FILE:vlcache> ${VLCACHE_SAMPLE_VIDEO}
          $<TARGET_FILE:send_garbage>
  EXPECT "open ok: good ([0-9]+) of \\1 in" "keyed ok: a 20 of 20" "ingest attacks ok"
  PROPERTIES TIMEOUT 240)
vlcache_command_test(security.beyond_loopback_without_authentication_is_refused EXIT nonzero
  COMMAND vlcache validate ${F}/open_ingest.toml
  EXPECT "\\[ingest\\].endpoint: binds '0.0.0.0', beyond loopback, without authentication"
         "\\[sink\\[0\\]\\].endpoint: binds '\\*'"
         "\\[view\\].http: binds '0.0.0.0', beyond loopback, without authentication: set \\[view\\] tls_cert")
vlcache_command_test(security.insecure_says_so
  COMMAND vlcache validate ${F}/open_ingest_insecure.toml
  EXPECT "valid: 0 camera")
vlcache_command_test(security.missing_key_file_is_named EXIT nonzero
  COMMAND vlcache validate ${F}/security_missing_key.toml
  EXPECT "\\[security\\].secret_key: cannot read key file '/nonexistent/pipeline.key'")
vlcache_command_test(security.view_over_https_needs_its_token
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/https_view_test.sh $<TARGET_FILE:vlcache> ${VLCACHE_SAMPLE_VIDEO}
  EXPECT "https ok"
  PROPERTIES TIMEOUT 120)
vlcache_command_test(security.encoder_link_over_mutual_tls
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/remote_tls_test.sh $<TARGET_FILE:vlcache> ${VLCACHE_SAMPLE_VIDEO}
  EXPECT "tls ok"
  PROPERTIES TIMEOUT 240)
vlcache_command_test(security.a_peer_over_its_rate_is_cut_the_other_is_not
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/peer_rate_test.sh $<TARGET_FILE:vlcache> ${VLCACHE_SAMPLE_VIDEO}
  EXPECT "limits ok"
  PROPERTIES TIMEOUT 180)
vlcache_command_test(security.curve_lets_in_only_allowed_keys
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/curve_security_test.sh $<TARGET_FILE:vlcache> ${VLCACHE_SAMPLE_VIDEO}
  EXPECT "secure ok"
  PROPERTIES TIMEOUT 180)
