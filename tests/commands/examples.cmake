# Command tests: The example programs under examples/.
# Included from tests/CMakeLists.txt (vlcache_command_test, ${F}, ${B} are defined there).

vlcache_command_test(examples.signatures_over_video
  COMMAND 01_signatures_over_video ${VLCACHE_SAMPLE_VIDEO}
  EXPECT "frame +49: +[0-9]+ of 196 patches changed" "hit rate (8[0-9]|9[0-9])\\.[0-9]%")
vlcache_command_test(examples.sparse_encoder_over_video
  COMMAND 02_sparse_encoder_over_video ${VLCACHE_SAMPLE_VIDEO} tiny
  EXPECT "lowest cosine to full forward 0\\.99[0-9]* over 3 checks")
vlcache_command_test(examples.ask_about_video
  COMMAND 05_ask_about_video ${VLCACHE_SAMPLE_VIDEO} ${F}/llama_tiny/llava_new
  EXPECT "frame +0: 16/16 .*16/16 image tokens prefilled \\(full\\).*frame +15: [0-9]+/16 patches encoded, [0-9]+/16 image tokens prefilled, ")
vlcache_command_test(examples.pipeline_in_code
  COMMAND 03_pipeline_in_code ${VLCACHE_SAMPLE_VIDEO}
  EXPECT "read +([0-9]+) = encoded +\\1 \\+ dropped 0 \\(oldest\\) \\+ 0 \\(newest\\) \\+ failed 0"
         "every frame accounted: yes"
  PROPERTIES TIMEOUT 60)
