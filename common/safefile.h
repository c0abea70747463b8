/* Files gpulaunch writes and reads, safe against another local user and against odd inputs:
 * writes never follow a planted link, reads never block on a FIFO nor eat a device. */
#ifndef GPL_COMMON_SAFEFILE_H
#define GPL_COMMON_SAFEFILE_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Read caps (bytes) for the inputs gpulaunch takes whole. */
#define SAFEFILE_CAP_CONFIG (4u << 20)  /* an INI config */
#define SAFEFILE_CAP_TEXT (64u << 20)   /* an hwloc XML export (the largest real ones: ~2 MiB) */

/* Every function here returns 0 or a negative GPL_E* code, and on failure writes one line into
 * err saying what is wrong with which path ("/tmp/x/rank-0.log: a symbolic link; refusing to
 * write through it"), for the caller to print with its own context. */

/* A folder files may be created in: it exists and is a folder, is owned by this user or root, is
 * not writable by others unless sticky (as /tmp is), and no symbolic link on the way to it is
 * owned by another user (the link could be swapped to point anywhere). */
int safefile_check_dir(const char *dir, char *err, size_t errlen);

/* Folder rules beyond safefile_check_dir's (flags of the *_flags calls, safefile_open_dir and
 * safefile_replace). */
#define SAFEFILE_DIR_GROUP 1u /* also a folder writable through a group this process is in,
                               * whoever owns it (node_exporter's textfile folder): for files
                               * written by safefile_replace only */

/* Open a folder without following another user's links on the way (each component opened
 * relative to the one before, O_NOFOLLOW, except links owned by this user or root), and check the
 * folder opened against safefile_check_dir's rule (flags: SAFEFILE_DIR_GROUP). *dfd is O_CLOEXEC;
 * GPL_ENOENT when a component is missing. */
int safefile_open_dir(const char *dir, unsigned flags, int *dfd, char *err, size_t errlen);

/* Replace the file at path whole with len bytes of data, mode `mode` (not masked by the umask):
 * written into a fresh name in the folder (safefile_open_dir with flags; O_EXCL|O_NOFOLLOW), then
 * renamed over path, so readers never see half a file and a link planted under either name is
 * replaced, never written through. */
int safefile_replace(const char *path, const void *data, size_t len, unsigned mode, unsigned flags,
                     char *err, size_t errlen);

/* Open a file for appending (log files, the audit log). The folder passes safefile_check_dir;
 * the file is opened with O_NOFOLLOW and created mode 0600; an existing one must be a regular
 * file of this user's (or root's) with a single link. The descriptor is O_CLOEXEC, blocking. */
int safefile_open_append(const char *path, int *fd, char *err, size_t errlen);

/* The same checks, then the file is emptied: for reports and summaries written whole. */
int safefile_open_write(const char *path, int *fd, char *err, size_t errlen);
/* safefile_open_write as a stdio stream ("w"); NULL and err on failure. */
FILE *safefile_fopen_write(const char *path, char *err, size_t errlen);
/* A whole text file written safely (safefile_open_write, then all of text): 0, or a negative
 * code with what went wrong, naming the file, in err (a full file system included). */
int safefile_write_text(const char *path, const char *text, char *err, size_t errlen);

/* Open a file for reading that must be a regular file (not a FIFO, device or folder): never
 * blocks in open. *size gets its size. */
int safefile_open_read(const char *path, int *fd, size_t *size, char *err, size_t errlen);

/* Read a whole regular file of at most cap bytes into a malloc'd NUL-terminated buffer (the file
 * may hold NUL bytes: *len is the length read). GPL_ENOENT (missing), GPL_EINVAL (not a regular
 * file), GPL_ERANGE (larger than cap), GPL_ESYS. */
int safefile_read(const char *path, size_t cap, char **out, size_t *len, char *err, size_t errlen);
/* Read a whole regular file (at most SAFEFILE_CAP_TEXT bytes) into a malloc'd NUL-terminated
 * buffer. 0, GPL_ENOENT, GPL_EINVAL (not a regular file), GPL_ERANGE (too large) or GPL_ESYS. */
int safefile_read_text(const char *path, char **out, size_t *len);

/* Can a file be written at path (its folder exists and passes safefile_check_dir)? For options
 * checked at start, before a job runs for hours and then cannot write its report. */
int safefile_check_parent(const char *path, char *err, size_t errlen);
/* The same with folder rules (SAFEFILE_DIR_GROUP for a file safefile_replace writes). */
int safefile_check_parent_flags(const char *path, unsigned flags, char *err, size_t errlen);

/* Could path be opened by safefile_open_append? An existing file is opened so (and closed); a
 * missing one needs a folder that passes safefile_check_dir and that this user may write in
 * (nothing is created). */
int safefile_check_append(const char *path, char *err, size_t errlen);

/* mkdir -p without following another user's links: each component is opened with O_NOFOLLOW
 * relative to the one before (openat; a link owned by this user or root is followed, as a
 * system's /var/run), a missing one is created with mkdirat only in a folder that passes
 * safefile_check_dir's owner and mode rule, and opened again without following (a link planted
 * in between is refused). The folder at the end must pass the same rule. '..' is refused. */
int safefile_mkdir_p(const char *path, unsigned mode, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
