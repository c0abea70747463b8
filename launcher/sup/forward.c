/* Program output on its way: other ranks' lines sent to rank 0 and written there (opts
 * forward_output), and backpressure on the program's pipes when a reader falls behind. */
#include <unistd.h>

#include "launcher/sup/sup_int.h"

#define FWD_CHUNK (64 << 10) /* forwarded output is sent in messages of up to this size */
#define FWD_MAX_INFLIGHT (8u << 20) /* stop reading the program's pipes above this */

void forward_flush(sup_t *s, int i) {
  if (!s->fwd[i].len) return;
  ctl_send_output(&s->ctl, i, s->fwd[i].s, s->fwd[i].len);
  strbuf_reset(&s->fwd[i]);
}

void forward_sink(void *arg, int is_err, const char *data, size_t len) {
  sup_t *s = arg;
  strbuf_append_n(&s->fwd[is_err], data, len);
  if (s->fwd[is_err].len >= FWD_CHUNK) forward_flush(s, is_err);
}

void forward_take(void *arg, int src, int is_err, const char *data, size_t len) {
  sup_t *s = arg;
  if (is_err == CTL_OUT_STACKS) {
    hangwatch_take(s, src, data, len);
    return;
  }
  if (is_err == CTL_OUT_SAMPLES) {
    sampler_take(s, src, data, len);
    return;
  }
  if (s->q) outq_write(s->q, is_err ? 2 : 1, data, len);
  else output_write_all(is_err ? STDERR_FILENO : STDOUT_FILENO, data, len);
}

/* Backpressure: when rank 0 falls behind, or our own stdout does (its reader is slow), stop
 * reading the program's output (it then blocks in write) rather than buffering without bound. */
void forward_throttle(sup_t *s) {
  /* Once the program has exited, its pipes are drained whatever the backlog; so they are once it
   * was told to stop: a program blocked in write could not write its checkpoint in the grace. */
  int over = !s->exited && !s->forwarded && (s->ctl.out_inflight > FWD_MAX_INFLIGHT ||
                            (s->q && outq_backlog(s->q) > OUTQ_HIGH));
  if (over == s->paused) return;
  s->paused = over;
  for (int i = 0; i < 2; i++) {
    if (uv_is_closing((uv_handle_t *)&s->pipes[i])) continue;
    child_read(s, i, !over);
  }
}
