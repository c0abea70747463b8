/* What the notice backends share: bounded HTTP requests to the instance metadata service (libcurl,
 * cut off at once by a stop), metadata session tokens, the clouds' time formats, reasons. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/preempt/notice_int.h"

/* curl_global_init is not thread-safe everywhere: once, before the first handle. */
static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;
static CURLcode g_curl_init_rc;
static void curl_once(void) { g_curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

int notice_http_init(notice_http_t *h, const notice_opts_t *opts, atomic_int *stop) {
  memset(h, 0, sizeof *h);
  pthread_once(&g_curl_once, curl_once);
  if (g_curl_init_rc != CURLE_OK) return GPL_ENOMEM;
  h->multi = curl_multi_init();
  if (!h->multi) return GPL_ENOMEM;
  h->stop = stop;
  h->connect_ms = (long)(opts->connect_timeout * 1000);
  h->total_ms = (long)(opts->timeout * 1000);
  return 0;
}

void notice_http_free(notice_http_t *h) {
  if (h->multi) curl_multi_cleanup(h->multi);
  h->multi = NULL;
}

void notice_http_wake(notice_http_t *h) {
  if (h->multi) curl_multi_wakeup(h->multi);
}

void notice_reply_free(notice_reply_t *r) {
  free(r->body);
  memset(r, 0, sizeof *r);
}

typedef struct {
  notice_reply_t *r;
  int over; /* the answer passed NOTICE_BODY_MAX */
} sink_t;

static size_t on_data(char *data, size_t size, size_t n, void *p) {
  sink_t *s = p;
  size_t k = size * n;
  if (s->r->len + k > NOTICE_BODY_MAX) return s->over = 1, 0;
  char *b = realloc(s->r->body, s->r->len + k + 1);
  if (!b) return 0;
  memcpy(b + s->r->len, data, k);
  s->r->len += k;
  b[s->r->len] = 0;
  s->r->body = b;
  return k;
}

static int map_error(CURLcode c, const sink_t *s, const notice_http_t *h, const char *url, char *why,
                     size_t whylen) {
  switch (c) {
    case CURLE_OPERATION_TIMEDOUT:
      util_fmt(why, whylen, "no answer from %s within %.1f s", url, h->total_ms / 1000.0);
      return GPL_ETIMEDOUT;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
      util_fmt(why, whylen, "cannot reach %s: %s", url, curl_easy_strerror(c));
      return GPL_EUNREACH;
    case CURLE_WRITE_ERROR:
      if (s->over) {
        util_fmt(why, whylen, "the answer from %s is over %u bytes", url, NOTICE_BODY_MAX);
        return GPL_EPROTO;
      }
      util_fmt(why, whylen, "out of memory reading %s", url);
      return GPL_ENOMEM;
    default:
      util_fmt(why, whylen, "request to %s failed: %s", url, curl_easy_strerror(c));
      return GPL_EIO;
  }
}

/* Run the easy handle on the multi handle until it is done or the stop flag is set. */
static int run(notice_http_t *h, CURL *e, CURLcode *result) {
  if (curl_multi_add_handle(h->multi, e) != CURLM_OK) return GPL_ENOMEM;
  int running = 1, rc = 0;
  while (running) {
    if (h->stop && atomic_load(h->stop)) {
      rc = GPL_ESTATE;
      break;
    }
    if (curl_multi_perform(h->multi, &running) != CURLM_OK) {
      rc = GPL_EIO;
      break;
    }
    /* libcurl's own timeouts end the transfer; this wait only bounds how late a stop is seen
     * when nothing wakes it (curl_multi_wakeup does) */
    if (running && curl_multi_poll(h->multi, NULL, 0, 200, NULL) != CURLM_OK) {
      rc = GPL_EIO;
      break;
    }
  }
  int left;
  CURLMsg *m;
  *result = CURLE_OK;
  while (rc == 0 && (m = curl_multi_info_read(h->multi, &left)))
    if (m->msg == CURLMSG_DONE && m->easy_handle == e) *result = m->data.result;
  curl_multi_remove_handle(h->multi, e);
  return rc;
}

int notice_http_do(notice_http_t *h, const char *method, const char *base, const char *path,
                   const char *const *headers, const char *body, notice_reply_t *r, char *why, size_t whylen) {
  memset(r, 0, sizeof *r);
  util_fmt(r->url, sizeof r->url, "%s%s", base, path);
  const char *url = r->url;
  CURL *e = curl_easy_init();
  if (!e) return GPL_ENOMEM;
  struct curl_slist *hl = NULL;
  int rc = 0;
  for (const char *const *p = headers; p && *p; p++) {
    struct curl_slist *n = curl_slist_append(hl, *p);
    if (!n) {
      rc = GPL_ENOMEM;
      goto out;
    }
    hl = n;
  }
  sink_t sink = {.r = r};
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
  if (body) {
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
  } else if (strcmp(method, "PUT") == 0) {
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, ""); /* a PUT with an empty body, as IMDSv2 wants */
  }
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, h->connect_ms);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, h->total_ms);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  /* The metadata service is on the link; an http_proxy of the job's environment must not carry
   * its requests elsewhere (a proxy is named with the endpoint instead). */
  curl_easy_setopt(e, CURLOPT_PROXY, "");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  CURLcode c;
  rc = run(h, e, &c);
  if (rc == GPL_ESTATE) {
    util_fmt(why, whylen, "stopped");
  } else if (rc < 0) {
    util_fmt(why, whylen, "request to %s: libcurl's multi interface failed", url);
  } else if (c != CURLE_OK) {
    rc = map_error(c, &sink, h, url, why, whylen);
  } else {
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r->status);
    if (!r->body && !(r->body = calloc(1, 1))) rc = GPL_ENOMEM;
  }
out:
  if (rc < 0) free(r->body), r->body = NULL, r->len = 0;
  curl_slist_free_all(hl);
  curl_easy_cleanup(e);
  return rc;
}

int notice_time_parse(const char *s, double *out) {
  static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  struct tm tm = {0};
  int y, mo = 0, d, h, mi, sec, n = 0;
  char mon[4] = "", wday[4] = "";
  double frac = 0;
  if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) == 6) {
    s += n;
    if (*s == '.') {
      char *end;
      frac = strtod(s, &end); /* ".5" */
      s = end;
    }
    if (strcmp(s, "Z") != 0 && strcmp(s, "+00:00") != 0) return GPL_EINVAL;
  } else if (sscanf(s, "%3[A-Za-z], %2d %3s %4d %2d:%2d:%2d GMT%n", wday, &d, mon, &y, &h, &mi, &sec, &n) == 7 &&
             wday[0] && s[n] == 0) {
    /* "Mon, 19 Sep 2016 18:29:47 GMT" */
    for (int i = 0; i < 12; i++)
      if (strcmp(mon, months[i]) == 0) mo = i + 1;
  } else {
    return GPL_EINVAL;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || y < 1970 || h < 0 ||
      mi < 0 || sec < 0 || !(frac >= 0 && frac < 1))
    return GPL_EINVAL;
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  time_t t = timegm(&tm);
  if (t == (time_t)-1) return GPL_EINVAL;
  *out = (double)t + frac;
  return 0;
}

void notice_quote(char *dst, size_t dstlen, const char *body, size_t len) {
  size_t k = 0;
  for (size_t i = 0; i < len && i < 40 && k + 1 < dstlen; i++)
    dst[k++] = isprint((unsigned char)body[i]) ? body[i] : '?';
  if (dstlen) dst[k < dstlen ? k : dstlen - 1] = 0;
}

int notice_bad_status(const notice_reply_t *r, char *why, size_t whylen) {
  char q[48];
  notice_quote(q, sizeof q, r->body, r->len);
  util_fmt(why, whylen, "HTTP %ld from %s: '%s'", r->status, r->url, q);
  return GPL_EPROTO;
}

/* What AWS and Alibaba grant at most; the token is fetched again a minute before it ends. */
#define TOKEN_TTL 21600

int notice_token_get(notice_http_t *h, const char *base, const char *path, const char *ttl_header,
                     int optional, notice_token_t *tok, char *why, size_t whylen) {
  if (tok->value[0] && util_now() - tok->at < TOKEN_TTL - 60) return 0;
  char hdr[128];
  util_fmt(hdr, sizeof hdr, "%s: %d", ttl_header, TOKEN_TTL);
  const char *const hdrs[] = {hdr, NULL};
  notice_reply_t r;
  int rc = notice_http_do(h, "PUT", base, path, hdrs, NULL, &r, why, whylen);
  if (rc < 0) return rc;
  size_t n = strspn(r.body, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/.");
  if (r.status != 200 && optional) {
    rc = 1;
  } else if (r.status != 200) {
    rc = notice_bad_status(&r, why, whylen);
  } else if (n == 0 || n != r.len || n >= sizeof tok->value) {
    util_fmt(why, whylen, "the token from %s is not a token", r.url);
    rc = GPL_EPROTO;
  } else {
    memcpy(tok->value, r.body, n + 1);
    tok->at = util_now();
  }
  notice_reply_free(&r);
  return rc;
}
