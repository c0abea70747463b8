/* Fuzz target: the interruption-notice parsers (launcher/preempt), which read what a metadata
 * service answers. The first byte picks the parser ('0' AWS, '1' GCP, '2' Azure, '3' Alibaba, '4'
 * AWS's rebalance recommendation, as in the seeds: (its value + 2) modulo 5), the rest is the
 * answer's body. Oracles: the result is 1, 0 or a
 * code of the error table; an error comes with a reason; a notice has its cloud, an action, an
 * event id, a text and a finite deadline, all NUL-terminated within their fields. */
#include <math.h>
#include <string.h>

#include "fuzz.h"
#include "gpulaunch/error.h"
#include "launcher/preempt/notice.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const char *body = (const char *)data + 1;
  size_t len = size - 1;
  notice_t n;
  char why[256];
  memset(&n, 0, sizeof n);
  why[0] = 0;
  int which = (data[0] + 2) % 5, rc;
  static const notice_kind_t clouds[] = {NOTICE_AWS, NOTICE_GCP, NOTICE_AZURE, NOTICE_ALIBABA, NOTICE_AWS};
  if (which == 0) rc = notice_aws_parse(body, len, &n, why, sizeof why);
  else if (which == 1) rc = notice_gcp_parse(body, len, 1e9, &n, why, sizeof why);
  else if (which == 2) rc = notice_azure_parse(body, len, "vm-test-1", 1e9, &n, why, sizeof why);
  else if (which == 3) rc = notice_alibaba_parse(body, len, &n, why, sizeof why);
  else rc = notice_aws_rebalance_parse(body, len, &n, why, sizeof why);
  FUZZ_ASSERT(rc == 0 || rc == 1 || (rc < 0 && strcmp(gpl_err_name(rc), "UNKNOWN") != 0), "rc %d", rc);
  if (rc < 0) FUZZ_ASSERT(why[0] && memchr(why, 0, sizeof why), "an error without a reason");
  if (rc == 1) {
    FUZZ_ASSERT(n.cloud == clouds[which], "cloud %d", n.cloud);
    FUZZ_ASSERT(n.advisory == (which == 4), "advisory %d from parser %d", n.advisory, which);
    FUZZ_ASSERT(memchr(n.action, 0, sizeof n.action) && n.action[0], "action");
    FUZZ_ASSERT(memchr(n.event_id, 0, sizeof n.event_id) && n.event_id[0], "event id");
    FUZZ_ASSERT(memchr(n.text, 0, sizeof n.text) && n.text[0], "text");
    FUZZ_ASSERT(isfinite(n.deadline) && n.deadline >= 0, "deadline %f", n.deadline);
  }
  return 0;
}
