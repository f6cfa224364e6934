/* rpbench worker built with AddressSanitizer: its malloc is ASan's (the "glibc-asan" row). */
#include "rpbench_worker.h"

/* The seed and memory scenarios leave their blocks allocated at exit, on purpose. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "detect_leaks=0"; }

int main(int argc, char **argv) { return rpbench_worker_main(argc, argv); }
