/* The configuration reference in Markdown (docs/config.md), made from the schema table. */
#include "launcher/conf/conf.h"

#include <string.h>

static const char *type_name(conf_type_t t) {
  switch (t) {
    case CONF_STR: return "text";
    case CONF_OUTPATH: return "output file";
    case CONF_INT: return "integer";
    case CONF_DOUBLE: return "number";
    case CONF_BOOL: return "boolean";
    case CONF_SIZE: return "size";
    case CONF_DURATION: return "duration";
    case CONF_ENUM: return "one of";
    case CONF_SIGNAL: return "signal";
    case CONF_PATH: return "input file";
    case CONF_COMMAND: return "command";
    case CONF_PORTS: return "port range";
    case CONF_FREE: return "KEY = value";
  }
  return "";
}

/* s with the characters that would end a table cell ('|') or start emphasis ('*') escaped. */
static void cell(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '|' || *s == '*') fputc('\\', f);
    fputc(*s, f);
  }
}

void conf_doc_markdown(FILE *f) {
  int n;
  const conf_key_t *k = conf_schema(&n);
  fputs("# Configuration reference\n\n"
        "<!-- Generated from launcher/conf/conf_keys.h: do not edit. Regenerate with\n"
        "     cmake --build build --target config_md -->\n\n"
        "A config file is INI: `[section]` headers and `key = value` lines; `#` or `;` starts a\n"
        "comment, an indented line continues the value above it. Unknown sections and keys, values\n"
        "of the wrong type and repeated keys are errors at load, named `file:line`.\n"
        "`gpulaunch --help-config` prints the same list; `gpulaunch check FILE` the values in effect.\n\n"
        "Types: a *size* is bytes with K/M/G suffixes (`64M`); a *duration* is `30s`, `500ms` or\n"
        "`2m`; a *boolean* is true/false/yes/no/on/off/1/0; a *signal* is `SIGTERM`, `TERM` or `15`;\n"
        "an *input file* must exist and is relative to the config file's folder; a *command* is\n"
        "split into words like a POSIX shell does, without running one.\n",
        f);
  const char *sec = "";
  for (int i = 0; i < n; i++) {
    if (strcmp(sec, k[i].section) != 0) {
      sec = k[i].section;
      fprintf(f, "\n## [%s]\n\n", sec);
      if (k[i].type != CONF_FREE)
        fputs("| key | type | default | meaning |\n|---|---|---|---|\n", f);
    }
    if (k[i].type == CONF_FREE) {
      cell(f, k[i].help);
      fputs(".\n", f);
      continue;
    }
    fprintf(f, "| `%s` | %s", k[i].key, type_name(k[i].type));
    if (k[i].type == CONF_ENUM) {
      fputs(" `", f);
      cell(f, k[i].choices);
      fputc('`', f);
    } else if (k[i].min != k[i].max && k[i].type != CONF_DURATION) {
      fprintf(f, " [%g, %g]", k[i].min, k[i].max);
    } else if (k[i].min != k[i].max) {
      fprintf(f, " (at least %gs)", k[i].min);
    }
    fputs(" | ", f);
    if (k[i].def[0]) {
      fputc('`', f);
      cell(f, k[i].def);
      fputc('`', f);
    } else {
      fputs("-", f);
    }
    fputs(" | ", f);
    cell(f, k[i].help);
    fputs(" |\n", f);
  }
}
