# Command tests: Network cameras (RTSP).
# Included from tests/CMakeLists.txt (vlcache_command_test, ${F}, ${B} are defined there).

# A real RTSP server on loopback (tools/rtsp_camera.py, GStreamer), stopped
# and restarted under a running pipeline.
vlcache_command_test(rtsp.camera_reconnects_and_an_unreachable_one_retries
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/rtsp_camera_test.sh $<TARGET_FILE:vlcache> ${PROJECT_SOURCE_DIR}
          ${F}/rtsp_pipeline.toml ${VLCACHE_SAMPLE_VIDEO}
  EXPECT "rtsp ok"
  PROPERTIES TIMEOUT 180)
