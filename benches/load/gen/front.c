/*
 * The program behind the `command` source of the dynamic-front scenario
 * (benches/load/run.sh), compiled at bench time with `cc -O2 -static`
 * (dynamically when static linking is not available): as cheap a program
 * as can be exec'd, so that Axle's pipeline, not the program, is what a
 * request costs beyond the process start-up itself.
 *
 *   front FILE      (run by Axle in the document root, CGI environment)
 *
 * PATH_INFO selects what it writes to stdout:
 *
 *   /repeat.xml   FILE as it is: the same bytes on every request.
 *   /change.xml   FILE with " (TOKEN)" inserted before its first "</title>"
 *                 (the article's own title, which article.xsl copies into
 *                 the page and layout.xsl into <title> and <h1>): every
 *                 stage's output changes with it. TOKEN is the query's
 *                 `token=` value when there is one (letters, digits, '-'
 *                 and '.': for the body checks, which need fixed bytes),
 *                 else CLOCK_REALTIME in nanoseconds and the process ID,
 *                 different on every run.
 *
 * Anything else: a message on stderr and exit status 2 (Axle answers 502).
 * The nginx backend of the upstream source (peers/nginx/front.conf.in)
 * writes the same bytes for the same token.
 */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 20];

static int write_all(const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(1, p, n);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int fail(const char *what)
{
    fprintf(stderr, "front: %s\n", what);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return fail("usage: front FILE");
    const char *path = getenv("PATH_INFO");
    int change;
    if (path && strcmp(path, "/repeat.xml") == 0)
        change = 0;
    else if (path && strcmp(path, "/change.xml") == 0)
        change = 1;
    else
        return fail("PATH_INFO is neither /repeat.xml nor /change.xml");

    int fd = open(argv[1], O_RDONLY);
    if (fd < 0)
        return fail("cannot open the document");
    size_t len = 0;
    for (;;) {
        ssize_t r = read(fd, buf + len, sizeof buf - len);
        if (r < 0)
            return fail("cannot read the document");
        if (r == 0)
            break;
        len += (size_t)r;
        if (len == sizeof buf)
            return fail("the document is too large");
    }
    close(fd);
    if (!change)
        return write_all(buf, len) ? 1 : 0;

    buf[len == sizeof buf ? len - 1 : len] = '\0';
    char *at = strstr(buf, "</title>");
    if (!at)
        return fail("the document has no </title>");

    char token[96];
    const char *q = getenv("QUERY_STRING");
    if (q && strncmp(q, "token=", 6) == 0 && q[6] != '\0' && strlen(q + 6) < 64
        && strspn(q + 6, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") == strlen(q + 6)) {
        snprintf(token, sizeof token, " (%s)", q + 6);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(token, sizeof token, " (%lld%09ld-%ld)", (long long)ts.tv_sec, ts.tv_nsec, (long)getpid());
    }
    size_t head = (size_t)(at - buf);
    if (write_all(buf, head) || write_all(token, strlen(token)) || write_all(at, len - head))
        return 1;
    return 0;
}
