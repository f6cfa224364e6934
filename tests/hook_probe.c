/* How many of the debug runtime's hooks are linked into this program: weak references to
 * their symbols, which stay NULL when nothing defines them. Includes no rampart header, so
 * the release flavour's inline no-op hooks of src/hooks.h cannot satisfy the references. */
#include <stddef.h>

extern char linked_hook_alloc __asm__("rp_hook_alloc") __attribute__((weak));
extern char linked_hook_free __asm__("rp_hook_free") __attribute__((weak));
extern char linked_hook_report __asm__("rp_hook_report") __attribute__((weak));

int linked_debug_hooks(void);

int linked_debug_hooks(void)
{
    return (&linked_hook_alloc != NULL) + (&linked_hook_free != NULL) + (&linked_hook_report != NULL);
}
