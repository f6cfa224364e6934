/* Asking the dumper thread for a dump (debug/dump_trigger.c), for the parts of rampart that
 * decide when one is due without a signal: the malloc drop-in's dump_on_peak
 * (src/malloc/malloc_totals.c). */
#ifndef RPD_DUMP_REQUEST_H
#define RPD_DUMP_REQUEST_H

/* What a request is for: the reason its dump records. */
enum { RPD_REQUEST_SIGNAL = 1, RPD_REQUEST_PEAK = 2 };

/* Wakes the dumper thread for a dump of every heap to the dump_path pattern. Never blocks and
 * is async-signal-safe (one write(2) to a non-blocking pipe); requests arriving while a dump is
 * being written are merged into one more dump. Returns 0, or -1 when no dumper thread runs (none
 * of dump_signal, dump_interval, dump_on_peak is set, or it could not be started, or this is a
 * forked child). */
int rpd_request(int what);

#endif
