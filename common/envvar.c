/* The GPULAUNCH_* table's reader (each value seen logged once at debug level) and its help texts. */
#include "common/envvar.h"

#include <stdlib.h>
#include <string.h>

typedef struct envvar_s {
  const char *name, *def, *help;
  envvar_kind_t kind;
} envvar_t;

static const envvar_t g_vars[ENVVAR_COUNT] = {
#define ENVVAR_ROW_(id, name, def, kind, help) {name, def, help, kind},
    ENVVAR_LIST(ENVVAR_ROW_)
#undef ENVVAR_ROW_
};

/* The value last logged for each variable (a hash: enough to log a changed value again). */
static unsigned long g_logged[ENVVAR_COUNT];

static unsigned long hash(const char *s) {
  unsigned long h = 5381;
  while (*s) h = h * 33 + (unsigned char)*s++;
  return h | 1; /* never 0, which means "not logged" */
}

/* Who hears of each value (the logger, which registers itself: the table does not call up into
 * it, so the two are no circle). */
static envvar_note_fn g_note;

void envvar_set_note(envvar_note_fn fn) { __atomic_store_n(&g_note, fn, __ATOMIC_RELEASE); }

const char *envvar_get(envvar_id_t id) {
  if ((unsigned)id >= ENVVAR_COUNT) return NULL;
  const char *v = getenv(g_vars[id].name);
  /* Before the logger has set the level it takes nothing and nothing is remembered: log_init
   * reads its own variables again once it has. */
  envvar_note_fn note = __atomic_load_n(&g_note, __ATOMIC_ACQUIRE);
  if (v && note) {
    unsigned long h = hash(v);
    if (__atomic_load_n(&g_logged[id], __ATOMIC_RELAXED) != h && note(g_vars[id].name, v))
      __atomic_store_n(&g_logged[id], h, __ATOMIC_RELAXED);
  }
  return v;
}

const char *envvar_name(envvar_id_t id) { return (unsigned)id < ENVVAR_COUNT ? g_vars[id].name : "?"; }

/* A Markdown table cell: '|' escaped. */
static void md_cell(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '|') fputc('\\', f);
    fputc(*s, f);
  }
}

/* help, wrapped at 100 columns; continuation lines start at column indent. */
static void wrapped(FILE *f, const char *text, int col, int indent) {
  const char *p = text;
  while (*p) {
    size_t n = strcspn(p, " ");
    if (col > indent && col + 1 + (int)n > 100) {
      fprintf(f, "\n%*s", indent, "");
      col = indent;
    } else if (col > indent) {
      fputc(' ', f);
      col++;
    }
    fwrite(p, 1, n, f);
    col += (int)n;
    p += n;
    while (*p == ' ') p++;
  }
}

void envvar_print(FILE *f, int markdown) {
  static const char *const heads[] = {
      [ENVVAR_USER] = "Environment (NAME=default):",
      [ENVVAR_INTERNAL] = "Set by gpulaunch, gpulaunch-run or a Slurm template for the processes they start:",
      [ENVVAR_PROGRAM] = ("Set by gpulaunch for the program it wraps (with GPULAUNCH_TIMEOUT, "
                          "GPULAUNCH_COMM_BACKEND and GPULAUNCH_COMM_INIT_TIMEOUT above):"),
      [ENVVAR_TEST] = "Test hooks (for the test suite; never in production):"};
  static const char *const md_kind[] = {[ENVVAR_USER] = "", [ENVVAR_INTERNAL] = "internal: ",
                                        [ENVVAR_PROGRAM] = "given to the program: ",
                                        [ENVVAR_TEST] = "test hook: "};
  if (markdown) fputs("| variable | default | meaning |\n|---|---|---|\n", f);
  for (int kind = ENVVAR_USER; kind <= ENVVAR_TEST; kind++) {
    if (!markdown) fprintf(f, "%s%s\n", kind == ENVVAR_USER ? "" : "\n", heads[kind]);
    for (int i = 0; i < ENVVAR_COUNT; i++) {
      const envvar_t *v = &g_vars[i];
      if ((int)v->kind != kind) continue;
      if (markdown) {
        fprintf(f, "| `%s` | %s%s%s | %s", v->name, *v->def ? "`" : "", v->def, *v->def ? "`" : "",
                md_kind[kind]);
        md_cell(f, v->help);
        fputs(" |\n", f);
        continue;
      }
      int col = fprintf(f, "  %s%s%s", v->name, *v->def ? "=" : "", v->def);
      fprintf(f, "%*s", col < 40 ? 40 - col : 1, "");
      wrapped(f, v->help, col < 40 ? 40 : col + 1, 40);
      fputc('\n', f);
    }
  }
}
