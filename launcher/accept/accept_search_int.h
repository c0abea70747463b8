/* What the bad-node search's two files share: its phases, group kinds and verdicts, and the calls
 * between the driver (accept_search.c) and the judgement (accept_search_eval.c). */
#ifndef GPL_LAUNCHER_ACCEPT_SEARCH_INT_H
#define GPL_LAUNCHER_ACCEPT_SEARCH_INT_H

#include "launcher/accept/accept.h"

enum { P_RING = 0, P_CONFIRM, P_HALVING, P_HPAIRS, P_DONE };
enum { K_LINK = 0, K_CONFIRM_NODE, K_CONFIRM_LINK, K_HALF, K_HPAIR, K_CONTROL };
enum { V_UNKNOWN = 0, V_GOOD, V_SUSPECT, V_BAD, V_NOT_REPRODUCED };
enum { L_OK = 0, L_FLAGGED, L_BAD, L_NOT_REPRODUCED };

/* The spread of a group's tries (-1: fewer than 2). */
double accept__series_spread(const accept_series_t *x);
/* Each of the nx suspect nodes x[] gets a good partner to be measured with (the confirmation). */
void accept__pick_partners(accept_search_t *s, const int *x, int nx);
/* A phase's measurements are all in: judge them and set up the next phase. */
void accept__ring_evaluate(accept_search_t *s, accept_report_t *rep, const char *const *hosts);
void accept__confirm_evaluate(accept_search_t *s, accept_report_t *rep, const char *const *hosts);
void accept__halving_evaluate(accept_search_t *s, accept_report_t *rep, const char *const *hosts);
void accept__hpairs_evaluate(accept_search_t *s, accept_report_t *rep, const char *const *hosts);

#endif
