/* XML/HTML text escaping shared by the JUnit and HTML reports of `gpulaunch accept`. */
#include "launcher/accept/accept.h"

void accept_xml_escape(strbuf_t *b, const char *s) {
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    switch (*p) {
      case '&': strbuf_append(b, "&amp;"); break;
      case '<': strbuf_append(b, "&lt;"); break;
      case '>': strbuf_append(b, "&gt;"); break;
      case '"': strbuf_append(b, "&quot;"); break;
      case '\'': strbuf_append(b, "&#39;"); break;
      default:
        /* XML 1.0 allows no control characters but tab, newline and carriage return. */
        if (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r') break;
        strbuf_append_n(b, (const char *)p, 1);
    }
  }
}
