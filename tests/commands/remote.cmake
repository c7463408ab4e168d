# Command tests: Remote encoder nodes.
# Included from tests/CMakeLists.txt (vlcache_command_test, ${F}, ${B} are defined there).

vlcache_command_test(remote.sigint_with_a_hung_node_ends_in_seconds
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/remote_node_hung_test.sh $<TARGET_FILE:vlcache>
          ${F}/tiny_pipeline_remote_dies.toml
  EXPECT "hung ok"
  PROPERTIES TIMEOUT 120)
vlcache_command_test(remote.two_nodes_share_four_cameras_and_survive_one
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/remote_two_nodes_test.sh $<TARGET_FILE:vlcache> ${VLCACHE_SAMPLE_VIDEO}
  EXPECT "two nodes ok"
  PROPERTIES TIMEOUT 300)
vlcache_command_test(remote.encoder_node_matches_local
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/remote_encoder_test.sh $<TARGET_FILE:vlcache> ${F}/tiny_pipeline.toml
          ${F}/tiny_pipeline_remote.toml
  EXPECT "same tokens for 50 frames"
  PROPERTIES TIMEOUT 120 RESOURCE_LOCK port5611)
# A node killed mid-run (SIGKILL): its batches fail at once, counted, and
# the run ends with its cameras instead of stalling on the request timeout.
vlcache_command_test(remote.node_killed_mid_run_fails_fast
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/remote_node_dies_test.sh $<TARGET_FILE:vlcache> ${F}/tiny_pipeline_remote_dies.toml
  EXPECT "node killed: run ended [0-9.]+ s later"
  PROPERTIES TIMEOUT 120)
# The same with a new node on the port 1.5 s after the kill: the pipeline
# reconnects (attempts back off from 1 s to 8 s) and its frames flow there.
vlcache_command_test(remote.node_restarted_is_reconnected
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/remote_node_dies_test.sh $<TARGET_FILE:vlcache> ${F}/tiny_pipeline_remote_dies.toml restart
  EXPECT "restarted node: [1-9][0-9]* reconnect"
  PROPERTIES TIMEOUT 180)
# fallback = "local": no node at the start, a node that comes and is
# killed; frames keep flowing here throughout.
vlcache_command_test(remote.local_fallback_keeps_frames_flowing
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/remote_fallback_test.sh $<TARGET_FILE:vlcache> ${F}/tiny_pipeline_remote_dies.toml
  EXPECT "fallback ok" "fallback, node killed: [0-9]+ frames encoded"
  PROPERTIES TIMEOUT 150)
# The same with a node frozen (SIGSTOP): reaching it again times out in the
# background, never on the encoder's thread, so frames keep flowing here.
vlcache_command_test(remote.a_hung_node_does_not_hold_the_local_fallback
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/remote_fallback_test.sh $<TARGET_FILE:vlcache> ${F}/tiny_pipeline_remote_dies.toml hung
  EXPECT "fallback ok" "fallback, node hung: [0-9]+ frames encoded"
  PROPERTIES TIMEOUT 150)
vlcache_command_test(remote.node_back_with_another_model_is_refused
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/remote_node_dies_test.sh $<TARGET_FILE:vlcache> ${F}/tiny_pipeline_remote_dies.toml wrong-model
  EXPECT "a node with another model: 0 reconnects" "is refused: it encodes 224/16"
  PROPERTIES TIMEOUT 180)
