# Command tests: The gate on noisy cameras.
# Included from tests/CMakeLists.txt (vlcache_command_test, ${F}, ${B} are defined there).

# Needs ffmpeg (the bootstrap installs it) to make the clips.
vlcache_command_test(gate.noisy_camera_costs_at_most_twice_the_clean_one
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/noisy_camera_gate_test.sh $<TARGET_FILE:vlcache> ${PROJECT_SOURCE_DIR}
          ${F}/noise_robust_gate.toml
  EXPECT "noise-robust: clean"
  PROPERTIES TIMEOUT 180)
