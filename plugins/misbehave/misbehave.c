/* `misbehave`: a C critic that misbehaves on purpose, for the tests of plugin isolation
 * (crates/cli/tests/isolation.rs). It answers {"score": 7} for every draft, except on tasks whose
 * id starts with "bad", where it does what its config's `mode` says:
 *
 *   "segfault"      raises SIGSEGV            "abort"       calls abort()
 *   "hang"          never returns             "leak"        allocates until malloc fails, then aborts
 *   "garbage"       answers text that is not JSON
 *   "invalid_utf8"  answers bytes that are not UTF-8
 *   "out_of_range"  answers {"score": 42} (its range is 0-10)
 *
 * and one mode that misbehaves on any task:
 *
 *   "hang_every_7th"  never returns from every seventh call in a process
 *
 * Config: {"mode": "..."}; any other config is refused. Its one mutable state is that mode's
 * count of calls (atomic), and it declares itself thread-safe. Build: cc -shared -fPIC -I crates/abi/include misbehave.c -o libmisbehave.so
 */
#define _POSIX_C_SOURCE 200809L

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "critbench.h"

#define NAME "misbehave"
#define VERSION "1.0.0"

enum mode { SEGFAULT, ABORT, HANG, LEAK, GARBAGE, INVALID_UTF8, OUT_OF_RANGE, HANG_EVERY_7TH, MODES };

static const char *const MODE_NAMES[MODES] = {
    "\"segfault\"", "\"abort\"", "\"hang\"", "\"leak\"", "\"garbage\"", "\"invalid_utf8\"", "\"out_of_range\"",
    "\"hang_every_7th\"",
};

static enum mode MODE_VALUES[MODES] = {SEGFAULT, ABORT, HANG, LEAK, GARBAGE, INVALID_UTF8, OUT_OF_RANGE, HANG_EVERY_7TH};

static int32_t answer(critbench_buffer *out, const char *bytes, int32_t status) {
    size_t len = strlen(bytes);
    uint8_t *copy = malloc(len);
    if (copy == NULL) {
        abort();
    }
    memcpy(copy, bytes, len);
    out->ptr = copy;
    out->len = len;
    return status;
}

/* Whether `haystack` (not NUL-terminated) contains `needle`. */
static int contains(critbench_str haystack, const char *needle) {
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= haystack.len; i++) {
        if (memcmp(haystack.ptr + i, needle, n) == 0) {
            return 1;
        }
    }
    return 0;
}

static int32_t critic_create(critbench_str config, const critbench_host *host, void **instance,
                             critbench_buffer *error) {
    (void)host;
    for (int m = 0; m < MODES; m++) {
        if (contains(config, "\"mode\"") && contains(config, MODE_NAMES[m])) {
            /* The instance is a pointer to its mode; nothing is allocated. */
            *instance = &MODE_VALUES[m];
            return CRITBENCH_OK;
        }
    }
    return answer(error, "config must be {\"mode\": M} with M one of segfault, abort, hang, leak, garbage, "
                         "invalid_utf8, out_of_range, hang_every_7th", CRITBENCH_ERROR);
}

/* The calls of this process, for "hang_every_7th". */
static unsigned long calls = 0;

/* Sleeps forever. */
static void hang(void) {
    for (;;) {
        struct timespec second = {1, 0};
        nanosleep(&second, NULL);
    }
}

static int32_t critic_critique(void *instance, critbench_str request, critbench_buffer *out) {
    enum mode mode = *(const enum mode *)instance;
    if (mode == HANG_EVERY_7TH) {
        if (__atomic_add_fetch(&calls, 1, __ATOMIC_SEQ_CST) % 7 == 0) {
            hang();
        }
        return answer(out, "{\"score\": 7, \"issues\": [], \"fatal_issues\": []}", CRITBENCH_OK);
    }
    if (!contains(request, "\"id\":\"bad")) {
        return answer(out, "{\"score\": 7, \"issues\": [], \"fatal_issues\": []}", CRITBENCH_OK);
    }
    switch (mode) {
    case SEGFAULT:
        /* As a crash does: a raised SIGSEGV is taken by the host's handler (Rust's stack-overflow
         * guard), which puts the default back and returns, where a faulting access would fault
         * again and die. The default action first, so that the first one kills. */
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
        break;
    case ABORT:
        abort();
    case HANG:
        hang();
        break;
    case LEAK:
        for (;;) {
            size_t size = (size_t)16 << 20;
            char *block = malloc(size);
            if (block == NULL) {
                abort();
            }
            memset(block, 1, size);
        }
    case GARBAGE:
        return answer(out, "this is not JSON at all", CRITBENCH_OK);
    case INVALID_UTF8:
        return answer(out, "{\"score\": 5, \"issues\": [\"\xff\xfe broken\"], \"fatal_issues\": []}", CRITBENCH_OK);
    case OUT_OF_RANGE:
        return answer(out, "{\"score\": 42, \"issues\": [], \"fatal_issues\": []}", CRITBENCH_OK);
    case HANG_EVERY_7TH:
    case MODES:
        break;
    }
    return answer(out, "unknown mode", CRITBENCH_ERROR);
}

static void critic_destroy(void *instance) {
    (void)instance;
}

static void critic_free_buffer(critbench_buffer buffer) {
    free(buffer.ptr);
}

static const critbench_critic_descriptor DESCRIPTOR = {
    CRITBENCH_ABI_VERSION,
    CRITBENCH_FLAG_THREAD_SAFE,
    {(const uint8_t *)NAME, sizeof NAME - 1},
    {(const uint8_t *)VERSION, sizeof VERSION - 1},
    0.0,
    10.0,
    {NULL, 0},
    critic_create,
    critic_critique,
    critic_destroy,
    critic_free_buffer,
    NULL,
    NULL,
    NULL,
};

const critbench_critic_descriptor *critbench_critic(void) {
    return &DESCRIPTOR;
}
