/* Internal to safefile*.c: the folder rule, the path split and the link-aware component open. */
#ifndef GPL_COMMON_SAFEFILE_INT_H
#define GPL_COMMON_SAFEFILE_INT_H

#include <stddef.h>
#include <sys/stat.h>

/* The folder part of path ("." when none) into dir and the last component into *base; -1 when
 * path names no file (empty, ".", "..", a trailing '/'). */
int safefile__split(const char *path, char *dir, size_t dlen, const char **base);
/* safefile_check_dir's rule on a folder's stat (flags: SAFEFILE_DIR_GROUP); err says why not. */
int safefile__check_dir_stat(const char *dir, const struct stat *st, unsigned flags, char *err,
                             size_t errlen);
/* Open component name below dfd as a folder (how: O_RDONLY or O_PATH) without following a link,
 * except one owned by this user or root; -1 with errno (EPERM: another user's link, its owner in
 * *link_uid). */
int safefile__open_component(int dfd, const char *name, unsigned *link_uid, int how);

#endif
