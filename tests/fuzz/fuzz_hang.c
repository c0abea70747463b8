/* Fuzz target: the hang watchdog's parsers: the collected stack texts ("@@key value" headers,
 * @@frames ';' lists) compared by hang_analyze, and [job] step_regex (its \d \s \w spelling)
 * applied to output lines by the progress tracker. Input: the regex on the first line, then rank
 * texts separated by NUL bytes. Oracles: odd ranks are real ranks, counted right, the first odd is
 * the first marked; steps are finite and at most PROG_MAX_STEPS are kept. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "launcher/hang/hang.h"
#include "launcher/hang/progress.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

#define MAX_RANKS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = fuzz_cstr(data, size);
  if (!buf) return 0;

  /* step_regex and the lines it reads */
  char *nl = memchr(buf, '\n', size);
  size_t rlen = nl ? (size_t)(nl - buf) : size;
  char *re = strndup(buf, rlen);
  prog_t *p = NULL;
  char err[256];
  if (re && prog_create(&p, re, NULL, err, sizeof err) == 0) {
    for (size_t i = rlen; i < size;) {
      size_t n = strcspn(buf + i, "\n");
      prog_line(p, buf + i, n);
      i += n + 1;
    }
    prog_step_t st[PROG_MAX_STEPS + 1];
    int k = prog_steps(p, st, PROG_MAX_STEPS + 1);
    FUZZ_ASSERT(k >= 0 && k <= PROG_MAX_STEPS, "%d steps kept", k);
    for (int i = 0; i < k; i++) FUZZ_ASSERT(!isnan(st[i].step), "step %d is NaN", i);
    prog_free(p);
  }
  free(re);

  /* the ranks' stack texts */
  hang_rank_t r[MAX_RANKS];
  int n = 0;
  for (size_t i = 0; i <= size && n < MAX_RANKS;) {
    const char *t = buf + i;
    size_t len = strnlen(t, size - i);
    r[n] = (hang_rank_t){n, "fuzzhost", len || n % 3 ? t : NULL, (double)n};
    n++;
    i += len + 1;
  }
  int odd[MAX_RANKS];
  hang_verdict_t v;
  hang_analyze(r, n, odd, &v);
  int cnt = 0, first = -1;
  for (int i = 0; i < n; i++) {
    FUZZ_ASSERT(odd[i] == 0 || odd[i] == 1, "odd[%d] = %d", i, odd[i]);
    if (odd[i] && first < 0) first = i;
    cnt += odd[i];
  }
  FUZZ_ASSERT(cnt == v.nodd, "%d odd marked, verdict says %d", cnt, v.nodd);
  FUZZ_ASSERT(first == v.first_odd, "first odd %d, verdict says %d", first, v.first_odd);
  FUZZ_ASSERT(memchr(v.summary, 0, sizeof v.summary) != NULL, "summary not terminated");
  FUZZ_ASSERT(memchr(v.func, 0, sizeof v.func) != NULL, "func not terminated");
  /* too early for a verdict: the peer on its way is a rank with a stack, never a silent one that
   * is not starting */
  int starting = -1, w = hang_too_early(r, n, 2.5, &starting);
  FUZZ_ASSERT(w >= -1 && w < n, "too early: rank %d of %d", w, n);
  FUZZ_ASSERT(w < 0 || (r[w].text && (starting || r[w].silent_s < 2.5)), "too early: rank %d named", w);
  FUZZ_ASSERT(starting == 0 || starting == 1, "starting = %d", starting);
  free(buf);
  return 0;
}
