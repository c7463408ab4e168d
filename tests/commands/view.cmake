# Command tests: The live view.
# Included from tests/CMakeLists.txt (vlcache_command_test, ${F}, ${B} are defined there).

# The live view in headless Chromium, and /metrics against the run summary.
# The screenshot is kept in the build tree as the test's artifact.
# Four cameras at 1400 and 1920 px: columns that fill the window, a chart
# of the run so far, the pipeline's rate; the run's end on the page and in /metrics.
vlcache_command_test(view.page_layout_and_run_end
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/live_view_layout_test.sh $<TARGET_FILE:vlcache> ${VLCACHE_SAMPLE_VIDEO} ${B}/artifacts
  EXPECT "dom_1400.html: 4 columns" "dom_1920.html: 4 columns" "live view layout ok"
  PROPERTIES TIMEOUT 240)
vlcache_command_test(view.live_page_and_metrics
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/live_view_test.sh $<TARGET_FILE:vlcache> ${F} ${VLCACHE_SAMPLE_VIDEO} ${B}/artifacts
  EXPECT "live view ok"
  PROPERTIES TIMEOUT 240 RESOURCE_LOCK port8931)
