# Command tests: The language model in a running pipeline.
# Included from tests/CMakeLists.txt (vlcache_command_test, ${F}, ${B} are defined there).

# The answer stage in a live pipeline: answers on the zmq sink, questions on
# demand over REQ/REP, bad requests refused alone.
vlcache_command_test(llm.pipeline_answers_and_requests
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/llm_pipeline_test.sh $<TARGET_FILE:vlcache> ${F} ${VLCACHE_SAMPLE_VIDEO}
  EXPECT "llm pipeline: [0-9]+ answers"
  PROPERTIES TIMEOUT 180 RESOURCE_LOCK port5595)

# The OpenAI-style API (/v1/chat/completions, /v1/models, /v1/cameras) of a
# running pipeline, through the official OpenAI Node client (npm install
# openai) and curl: answers checked against the scene's truth, `vlcache
# request` and `vlcache ask`; every error status (docs/openai-api.md).
vlcache_command_test(llm.openai_api_with_the_official_client
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/openai_api_test.sh $<TARGET_FILE:vlcache> ${PROJECT_SOURCE_DIR} ${B}/heldout/seed1003
  EXPECT "plain: frame [0-9]+ -> '[0-9]+' \\(truth '[0-9]+'\\), prompt [0-9]+ tokens, [0-9]+ cached"
         "streamed: frame [0-9]+ -> '[0-9]+' \\(truth '[0-9]+'\\), prompt [0-9]+ tokens, [1-9][0-9]* cached"
         "request and API both say" "image: data URL and vlcache ask both say" "client: unknown camera -> 404"
         "curl: 401, 404, 400, 413 as expected" "refused with 429 and Retry-After" "curl: 409 without a language model"
         "example example_stream.txt: .* about frame [0-9]+" "example: the image answered"
         "openai api: all checks passed"
  PROPERTIES FIXTURES_REQUIRED heldout_scenes TIMEOUT 240)
