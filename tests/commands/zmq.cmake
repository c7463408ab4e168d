# Command tests: ZeroMQ ingest, sinks and listeners.
# Included from tests/CMakeLists.txt (vlcache_command_test, ${F}, ${B} are defined there).

vlcache_command_test(zmq.pipeline_to_listener
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/zmq_pubsub_test.sh $<TARGET_FILE:vlcache> ${F}/tiny_pipeline_zmq.toml
          $<TARGET_FILE:04_answer_consumer> ${PROJECT_SOURCE_DIR}/examples/answer_consumer.py
  EXPECT "both streams in order"
  PROPERTIES TIMEOUT 120 RESOURCE_LOCK port5591)
vlcache_command_test(zmq.cameras_ingest_listener
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/zmq_ingest_test.sh $<TARGET_FILE:vlcache> ${F}/ingest_pipeline.toml
          $<TARGET_FILE:send_garbage>
  EXPECT "ingest ok"
  PROPERTIES TIMEOUT 180 RESOURCE_LOCK port5592)
