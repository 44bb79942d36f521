// Default sanitizer options, compiled into `cairn` and `cairn_tests` of a sanitizer build
// (CAIRN_SANITIZE=address|thread), so that ctest, the tests' child `cairn` processes and a
// developer's shell all fail on the first finding without setting any variable. Options in the
// environment (ASAN_OPTIONS, UBSAN_OPTIONS, TSAN_OPTIONS) still override these.
//
// - halt_on_error=1: the first report ends the process with a non-zero exit code, which fails
//   the test that ran it (a child `cairn` then exits 1, never the 0 or 2 a test expects).
// - detect_leaks=1: LeakSanitizer at exit (processes ended by SIGKILL are not checked).
// - TSan reads tests/sanitizers/tsan.supp, where each entry is explained.

extern "C" const char* __asan_default_options() { return "halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=1"; }

extern "C" const char* __ubsan_default_options() { return "halt_on_error=1:print_stacktrace=1"; }

extern "C" const char* __lsan_default_options() { return ""; }

extern "C" const char* __tsan_default_options() {
  return "halt_on_error=1:second_deadlock_stack=1:suppressions=" CAIRN_TSAN_SUPPRESSIONS;
}
