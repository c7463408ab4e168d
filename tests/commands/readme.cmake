# Command tests: The README as written.
# Included from tests/CMakeLists.txt (vlcache_command_test, ${F}, ${B} are defined there).

# README's first pipeline as written: the shipped model, the sample video, no [input].
vlcache_command_test(readme.first_pipeline_runs_as_written
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/readme_first_pipeline_test.sh $<TARGET_FILE:vlcache> ${PROJECT_SOURCE_DIR}
  EXPECT "valid: 1 camera\\(s\\), model .*tiny-llava-scenes, 160/16 grid" "first pipeline ok"
  PROPERTIES TIMEOUT 180 RESOURCE_LOCK port5570)
