/* The library's version (rampart.h). A function, not only the header's macros, so a program
 * can tell which library it actually runs with (a shared library upgraded under it). */
#include "rampart.h"

const char *rp_version(void) { return RAMPART_VERSION_STRING; }
