/* fleet lab stand-in: listed in a lab host's /etc/ld.so.preload so that uname(2) as seen by every
 * program (uname -m, Python's platform.machine(), pip's wheel tags) reports the profile's machine and
 * kernel release. Built with -DLAB_MACHINE="aarch64" -DLAB_RELEASE="6.8.12-tegra". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include <sys/utsname.h>

typedef int (*uname_fn)(struct utsname *);

int uname(struct utsname *buf) {
    static uname_fn real_uname;
    if (!real_uname)
        real_uname = (uname_fn)dlsym(RTLD_NEXT, "uname");
    int rc = real_uname(buf);
    if (rc == 0) {
        strncpy(buf->machine, LAB_MACHINE, sizeof buf->machine - 1);
        buf->machine[sizeof buf->machine - 1] = '\0';
        strncpy(buf->release, LAB_RELEASE, sizeof buf->release - 1);
        buf->release[sizeof buf->release - 1] = '\0';
    }
    return rc;
}
