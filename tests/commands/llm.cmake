# Command tests: The language model in a running pipeline.
# Included from tests/CMakeLists.txt (vlcache_command_test, ${F}, ${B} are defined there).

# The answer stage in a live pipeline: answers on the zmq sink, questions on
# demand over REQ/REP, bad requests refused alone.
vlcache_command_test(llm.pipeline_answers_and_requests
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/llm_pipeline_test.sh $<TARGET_FILE:vlcache> ${F} ${VLCACHE_SAMPLE_VIDEO}
  EXPECT "llm pipeline: [0-9]+ answers"
  PROPERTIES TIMEOUT 180 RESOURCE_LOCK port5595)
