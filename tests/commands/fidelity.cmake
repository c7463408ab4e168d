# Command tests: Fidelity checks, audits and the controller in real runs.
# Included from tests/CMakeLists.txt (vlcache_command_test, ${F}, ${B} are defined there).

# The fidelity controller moves a camera in a real run (needs ffmpeg).
vlcache_command_test(fidelity.controller_moves_in_a_real_run
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/fidelity_controller_run_test.sh $<TARGET_FILE:vlcache> ${PROJECT_SOURCE_DIR}
  EXPECT "controller moved both ways"
  PROPERTIES TIMEOUT 180)
# vlcache tune writes a profile that validate accepts and run applies; another shape is refused.
vlcache_command_test(fidelity.tune_writes_a_profile_run_applies
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/tune_profile_test.sh $<TARGET_FILE:vlcache> ${VLCACHE_SAMPLE_VIDEO}
  EXPECT "profile written, accepted, applied and refused for another shape"
  PROPERTIES TIMEOUT 180)
# Answer audits in a real run: they run, are counted and reach the controller.
vlcache_command_test(fidelity.answer_audits_in_a_real_run
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/process/answer_audit_run_test.sh $<TARGET_FILE:vlcache> ${PROJECT_SOURCE_DIR}
  EXPECT "audits ran and reached the controller"
  PROPERTIES TIMEOUT 180)
