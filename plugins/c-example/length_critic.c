/*
 * length_critic.c — a critbench critic plugin in plain C (see crates/abi/include/critbench.h).
 *
 * It scores a draft by its word count against a target: score = 10 * min(words, target) / target,
 * rounded to 0.1. An empty draft is a fatal issue; fewer than half the target words is an issue with
 * a suggestion. Config: {"target_words": N} (default 150). Issues are typed ({"text", "type"}):
 * `too_short` and `empty_draft`, declared with their memory hints in the plugin's info (INFO below).
 *
 * The request is read with a small JSON scanner rather than a library, so the plugin has no
 * dependency beyond libc. The scanner checks the JSON grammar of every value it skips, so a "draft"
 * key inside the task, or braces and quotes inside strings, cannot be mistaken for the top-level
 * draft. No state is shared between calls, so the plugin is thread-safe.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "critbench.h"

#define DEFAULT_TARGET_WORDS 150L
/* Keeps 100 * target far from overflow; no sensible essay target is larger. */
#define MAX_TARGET_WORDS 1000000L
/* Deeper nesting than this is refused rather than risking the host's stack. */
#define MAX_DEPTH 256

typedef struct length_critic {
    long target_words;
} length_critic;

/* ---- output buffers ---------------------------------------------------------------------------- */

typedef struct text {
    char *ptr;
    size_t len;
    size_t cap;
    int failed; /* an allocation failed; every later append is a no-op */
} text;

static void text_append(text *t, const char *bytes, size_t len) {
    if (t->failed || len == 0) {
        return;
    }
    if (t->len + len > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        char *grown;
        while (cap < t->len + len) {
            cap *= 2;
        }
        grown = realloc(t->ptr, cap);
        if (grown == NULL) {
            t->failed = 1;
            return;
        }
        t->ptr = grown;
        t->cap = cap;
    }
    memcpy(t->ptr + t->len, bytes, len);
    t->len += len;
}

static void text_puts(text *t, const char *s) {
    text_append(t, s, strlen(s));
}

/* Only integers are printed: %zu looks the same under every locale, unlike %f. */
static void text_size(text *t, size_t value) {
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%zu", value);
    if (n > 0) {
        text_append(t, digits, (size_t)n);
    }
}

/* Hands the text over as a plugin-owned buffer through `out`, or frees it if there is nowhere to
 * put it. After a failed allocation the buffer is empty: there is no memory for a message. */
static void text_give(text *t, critbench_buffer *out) {
    if (out == NULL || t->failed) {
        free(t->ptr);
        t->ptr = NULL;
        t->len = 0;
    }
    if (out != NULL) {
        out->ptr = (uint8_t *)t->ptr;
        out->len = t->len;
    }
}

static int32_t fail(critbench_buffer *out, const char *prefix, const char *message) {
    text t = {NULL, 0, 0, 0};
    text_puts(&t, prefix);
    text_puts(&t, message);
    text_give(&t, out);
    return CRITBENCH_ERROR;
}

/* ---- JSON scanning ----------------------------------------------------------------------------- */

typedef struct scanner {
    const uint8_t *p;
    const uint8_t *end;
    const char *error; /* the first problem found, or NULL */
} scanner;

static int scan_failed(scanner *s, const char *message) {
    if (s->error == NULL) {
        s->error = message;
    }
    return 0;
}

static void skip_space(scanner *s) {
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')) {
        s->p++;
    }
}

static int hex_digit(uint8_t c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

static int read_hex4(scanner *s, uint32_t *value) {
    int i;
    *value = 0;
    if (s->end - s->p < 4) {
        return scan_failed(s, "truncated \\u escape");
    }
    for (i = 0; i < 4; i++) {
        int digit = hex_digit(s->p[i]);
        if (digit < 0) {
            return scan_failed(s, "bad \\u escape");
        }
        *value = (*value << 4) | (uint32_t)digit;
    }
    s->p += 4;
    return 1;
}

/* Decodes one UTF-8 sequence of raw string bytes. Invalid bytes decode as U+FFFD, one byte each:
 * they still belong to a word, which is all that matters for counting. */
static uint32_t read_utf8(scanner *s) {
    uint8_t lead = *s->p++;
    int extra;
    uint32_t cp;
    if (lead < 0x80) {
        return lead;
    } else if ((lead & 0xE0) == 0xC0) {
        extra = 1;
        cp = lead & 0x1F;
    } else if ((lead & 0xF0) == 0xE0) {
        extra = 2;
        cp = lead & 0x0F;
    } else if ((lead & 0xF8) == 0xF0) {
        extra = 3;
        cp = lead & 0x07;
    } else {
        return 0xFFFD;
    }
    if (s->end - s->p < extra) {
        return 0xFFFD;
    }
    for (; extra > 0; extra--) {
        if ((*s->p & 0xC0) != 0x80) {
            return 0xFFFD;
        }
        cp = (cp << 6) | (*s->p++ & 0x3F);
    }
    return cp;
}

static int is_space(uint32_t cp) {
    return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

/* What to do with the characters of a string while scanning it. */
typedef struct string_sink {
    /* Counts words (runs of non-space characters) when non-NULL. */
    size_t *words;
    /* Collects up to `cap` bytes of the decoded string when non-NULL (enough to compare keys). */
    char *bytes;
    size_t cap;
    size_t len;
} string_sink;

static void sink_char(string_sink *sink, uint32_t cp, int *in_word) {
    if (sink == NULL) {
        return;
    }
    if (sink->words != NULL) {
        if (is_space(cp)) {
            *in_word = 0;
        } else if (!*in_word) {
            *in_word = 1;
            (*sink->words)++;
        }
    }
    if (sink->bytes != NULL) {
        /* Keys we look for are ASCII; anything else only has to compare unequal. */
        if (sink->len < sink->cap) {
            sink->bytes[sink->len] = cp < 0x80 ? (char)cp : '?';
        }
        sink->len++;
    }
}

/* Scans a string starting at its opening quote, feeding its decoded characters to `sink`. */
static int scan_string(scanner *s, string_sink *sink) {
    int in_word = 0;
    if (s->p >= s->end || *s->p != '"') {
        return scan_failed(s, "expected a string");
    }
    s->p++;
    while (s->p < s->end) {
        uint8_t c = *s->p;
        uint32_t cp;
        if (c == '"') {
            s->p++;
            return 1;
        }
        if (c < 0x20) {
            return scan_failed(s, "control character inside a string");
        }
        if (c != '\\') {
            cp = read_utf8(s);
            sink_char(sink, cp, &in_word);
            continue;
        }
        s->p++;
        if (s->p >= s->end) {
            break;
        }
        switch (*s->p++) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = 0x08; break;
        case 'f': cp = 0x0C; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u':
            if (!read_hex4(s, &cp)) {
                return 0;
            }
            /* A high surrogate followed by an escaped low one is one character. */
            if (cp >= 0xD800 && cp <= 0xDBFF && s->end - s->p >= 6 && s->p[0] == '\\' && s->p[1] == 'u') {
                const uint8_t *before = s->p;
                uint32_t low;
                s->p += 2;
                if (!read_hex4(s, &low)) {
                    return 0;
                }
                if (low >= 0xDC00 && low <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                } else {
                    s->p = before;
                }
            }
            break;
        default:
            return scan_failed(s, "bad escape inside a string");
        }
        sink_char(sink, cp, &in_word);
    }
    return scan_failed(s, "unterminated string");
}

static int scan_digits(scanner *s) {
    const uint8_t *start = s->p;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9') {
        s->p++;
    }
    return s->p > start;
}

/* Scans a JSON number; `whole` (if non-NULL) is set when it has no fraction or exponent. */
static int scan_number(scanner *s, int *whole) {
    int is_whole = 1;
    if (s->p < s->end && *s->p == '-') {
        s->p++;
    }
    if (s->p < s->end && *s->p == '0') {
        s->p++;
    } else if (!scan_digits(s)) {
        return scan_failed(s, "bad number");
    }
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        is_whole = 0;
        if (!scan_digits(s)) {
            return scan_failed(s, "bad number");
        }
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;
        is_whole = 0;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-')) {
            s->p++;
        }
        if (!scan_digits(s)) {
            return scan_failed(s, "bad number");
        }
    }
    if (whole != NULL) {
        *whole = is_whole;
    }
    return 1;
}

static int scan_literal(scanner *s, const char *word) {
    size_t len = strlen(word);
    if ((size_t)(s->end - s->p) < len || memcmp(s->p, word, len) != 0) {
        return scan_failed(s, "unexpected character");
    }
    s->p += len;
    return 1;
}

static int skip_value(scanner *s, int depth);

/* Scans the members of an object or the elements of an array after its opening bracket. */
static int skip_container(scanner *s, int depth, uint8_t close) {
    if (depth > MAX_DEPTH) {
        return scan_failed(s, "JSON nested too deeply");
    }
    skip_space(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        return 1;
    }
    for (;;) {
        if (close == '}') {
            if (!scan_string(s, NULL)) {
                return 0;
            }
            skip_space(s);
            if (s->p >= s->end || *s->p != ':') {
                return scan_failed(s, "expected ':' after an object key");
            }
            s->p++;
        }
        if (!skip_value(s, depth)) {
            return 0;
        }
        skip_space(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            skip_space(s);
            continue;
        }
        if (s->p < s->end && *s->p == close) {
            s->p++;
            return 1;
        }
        return scan_failed(s, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int skip_value(scanner *s, int depth) {
    skip_space(s);
    if (s->p >= s->end) {
        return scan_failed(s, "unexpected end of JSON");
    }
    switch (*s->p) {
    case '{': s->p++; return skip_container(s, depth + 1, '}');
    case '[': s->p++; return skip_container(s, depth + 1, ']');
    case '"': return scan_string(s, NULL);
    case 't': return scan_literal(s, "true");
    case 'f': return scan_literal(s, "false");
    case 'n': return scan_literal(s, "null");
    case '-': return scan_number(s, NULL);
    default:
        if (*s->p >= '0' && *s->p <= '9') {
            return scan_number(s, NULL);
        }
        return scan_failed(s, "unexpected character");
    }
}

/* Reads an object key into `key` (truncated to `cap`) and the ':' after it; returns its full
 * decoded length through `len`. */
static int scan_key(scanner *s, char *key, size_t cap, size_t *len) {
    string_sink sink = {NULL, key, cap, 0};
    if (!scan_string(s, &sink)) {
        return 0;
    }
    *len = sink.len;
    skip_space(s);
    if (s->p >= s->end || *s->p != ':') {
        return scan_failed(s, "expected ':' after an object key");
    }
    s->p++;
    skip_space(s);
    return 1;
}

static int key_is(const char *key, size_t len, const char *name) {
    return len == strlen(name) && memcmp(key, name, len) == 0;
}

/* Walks a top-level object, calling `member` at the start of each member's value. `member`
 * either consumes the value and returns 1, returns 0 on error, or returns -1 to have it skipped. */
typedef int (*member_fn)(scanner *s, const char *key, size_t key_len, void *state);

static int scan_object(scanner *s, member_fn member, void *state) {
    skip_space(s);
    if (s->p >= s->end || *s->p != '{') {
        return scan_failed(s, "expected a JSON object");
    }
    s->p++;
    skip_space(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
    } else {
        for (;;) {
            char key[32];
            size_t key_len;
            int handled;
            if (!scan_key(s, key, sizeof key, &key_len)) {
                return 0;
            }
            handled = member(s, key, key_len, state);
            if (handled == 0 || (handled < 0 && !skip_value(s, 1))) {
                return 0;
            }
            skip_space(s);
            if (s->p < s->end && *s->p == ',') {
                s->p++;
                skip_space(s);
                continue;
            }
            if (s->p < s->end && *s->p == '}') {
                s->p++;
                break;
            }
            return scan_failed(s, "expected ',' or '}'");
        }
    }
    skip_space(s);
    if (s->p != s->end) {
        return scan_failed(s, "unexpected text after the JSON object");
    }
    return 1;
}

/* ---- config ------------------------------------------------------------------------------------ */

typedef struct config_state {
    long target_words;
    int seen_target;
    char message[160];
} config_state;

static int config_member(scanner *s, const char *key, size_t key_len, void *state) {
    config_state *config = state;
    const uint8_t *start;
    int whole = 0;
    long value = 0;
    if (!key_is(key, key_len, "target_words")) {
        snprintf(config->message, sizeof config->message,
                 "unknown config key \"%.*s\"%s: the length critic takes only \"target_words\"",
                 (int)(key_len < 32 ? key_len : 32), key, key_len > 32 ? "..." : "");
        return scan_failed(s, config->message);
    }
    if (config->seen_target) {
        return scan_failed(s, "config key \"target_words\" is given twice");
    }
    config->seen_target = 1;
    start = s->p;
    if (s->p >= s->end || !(*s->p == '-' || (*s->p >= '0' && *s->p <= '9'))) {
        return scan_failed(s, "config key \"target_words\" must be a positive whole number");
    }
    if (!scan_number(s, &whole)) {
        return 0;
    }
    if (!whole || *start == '-') {
        /* "-0" is not positive either, so every '-' is refused. */
        snprintf(config->message, sizeof config->message,
                 "config key \"target_words\" must be a positive whole number, got %.*s",
                 (int)(s->p - start < 40 ? s->p - start : 40), (const char *)start);
        return scan_failed(s, config->message);
    }
    for (; start < s->p; start++) {
        value = value * 10 + (*start - '0');
        if (value > MAX_TARGET_WORDS) {
            snprintf(config->message, sizeof config->message,
                     "config key \"target_words\" must be at most %ld", MAX_TARGET_WORDS);
            return scan_failed(s, config->message);
        }
    }
    if (value <= 0) {
        return scan_failed(s, "config key \"target_words\" must be a positive whole number, got 0");
    }
    config->target_words = value;
    return 1;
}

static int32_t critic_create(critbench_str config, const critbench_host *host, void **instance,
                             critbench_buffer *error) {
    config_state state = {DEFAULT_TARGET_WORDS, 0, ""};
    length_critic *critic;
    (void)host; /* this critic needs no host services */
    if (instance == NULL) {
        return fail(error, "length critic: ", "no place to put the instance");
    }
    *instance = NULL;
    /* No config text at all means the defaults, like `{}`. */
    if (config.ptr != NULL && config.len > 0) {
        scanner s;
        s.p = config.ptr;
        s.end = config.ptr + config.len;
        s.error = NULL;
        if (!scan_object(&s, config_member, &state)) {
            return fail(error, "length critic config: ", s.error);
        }
    }
    critic = malloc(sizeof *critic);
    if (critic == NULL) {
        return fail(error, "length critic: ", "out of memory");
    }
    critic->target_words = state.target_words;
    *instance = critic;
    return CRITBENCH_OK;
}

/* ---- critique ---------------------------------------------------------------------------------- */

typedef struct request_state {
    int seen_draft;
    size_t words;
} request_state;

static int request_member(scanner *s, const char *key, size_t key_len, void *state) {
    request_state *request = state;
    string_sink sink = {NULL, NULL, 0, 0};
    if (!key_is(key, key_len, "draft")) {
        return -1;
    }
    if (s->p >= s->end || *s->p != '"') {
        return scan_failed(s, "\"draft\" is not a string");
    }
    /* A repeated key counts as its last value, as most JSON readers do. */
    request->seen_draft = 1;
    request->words = 0;
    sink.words = &request->words;
    return scan_string(s, &sink);
}

static int32_t critic_critique(void *instance, critbench_str request, critbench_buffer *out) {
    static const uint8_t nothing[1] = {0};
    const length_critic *critic = instance;
    request_state state = {0, 0};
    scanner s;
    text t = {NULL, 0, 0, 0};
    size_t target, words, counted, tenths;
    int too_short;
    if (critic == NULL) {
        return fail(out, "length critic: ", "no instance");
    }
    s.p = request.ptr != NULL ? request.ptr : nothing;
    s.end = s.p + (request.ptr != NULL ? request.len : 0);
    s.error = NULL;
    if (!scan_object(&s, request_member, &state)) {
        return fail(out, "malformed critique request: ", s.error);
    }
    if (!state.seen_draft) {
        return fail(out, "malformed critique request: ", "no \"draft\" string");
    }

    target = (size_t)critic->target_words;
    words = state.words;
    counted = words < target ? words : target;
    /* Rounded to tenths, half up, in integers: the score is printed without floating point, so
     * the host's locale cannot turn its decimal point into a comma. */
    tenths = (counted * 100 + target / 2) / target;
    /* Below half the target: 2 * words < target, without the multiplication. */
    too_short = words > 0 && words < (target + 1) / 2;

    text_puts(&t, "{\"critique_version\": 1, \"score\": ");
    text_size(&t, tenths / 10);
    text_puts(&t, ".");
    text_size(&t, tenths % 10);
    text_puts(&t, ", \"issues\": [");
    if (too_short) {
        text_puts(&t, "{\"text\": \"draft is too short: ");
        text_size(&t, words);
        text_puts(&t, " words, target ");
        text_size(&t, target);
        text_puts(&t, "\", \"type\": \"too_short\"}");
    }
    text_puts(&t, "], \"fatal_issues\": [");
    if (words == 0) {
        text_puts(&t, "{\"text\": \"empty draft\", \"type\": \"empty_draft\"}");
    }
    text_puts(&t, "], \"suggestions\": [");
    if (words == 0) {
        text_puts(&t, "{\"dimension\": \"length\", \"edit\": \"write a draft of about ");
        text_size(&t, target);
        text_puts(&t, " words\"}");
    } else if (too_short) {
        text_puts(&t, "{\"dimension\": \"length\", \"edit\": \"add about ");
        text_size(&t, target - words);
        text_puts(&t, " words: develop each point with an example or a reason\"}");
    }
    text_puts(&t, "], \"rationale\": \"");
    text_size(&t, words);
    text_puts(&t, words == 1 ? " word against a target of " : " words against a target of ");
    text_size(&t, target);
    text_puts(&t, "\"}");
    if (t.failed) {
        text_give(&t, out);
        return CRITBENCH_ERROR;
    }
    text_give(&t, out);
    return CRITBENCH_OK;
}

static void critic_destroy(void *instance) {
    free(instance);
}

static void critic_free_buffer(critbench_buffer buffer) {
    free(buffer.ptr);
}

/* ---- entry point ------------------------------------------------------------------------------- */

static const char NAME[] = "length";
static const char VERSION[] = "1.0.0";

/* What the plugin declares about itself (critbench.h, "plugin info"). The same JSON sits beside
 * this file as length.plugin.json, so that a run that cannot find the unbuilt library can still
 * say how to build it. */
static const char INFO[] =
    "{\"info_version\": 1,"
    " \"issue_types\": ["
    "{\"name\": \"too_short\", \"hint\": \"Develop every point with an example or a reason: aim for the target length.\"},"
    " {\"name\": \"empty_draft\", \"hint\": \"Always write a full draft.\"}],"
    " \"hints\": {\"not_found\": \"`length` is the C example critic (plugins/c-example/length_critic.c); build it with"
    " `just c-plugin`, which writes reports/plugins/liblength.so\"}}";

/* Every request carries its task, so the three task functions are NULL. */
static const critbench_critic_descriptor DESCRIPTOR = {
    CRITBENCH_ABI_VERSION,
    CRITBENCH_FLAG_THREAD_SAFE,
    {(const uint8_t *)NAME, sizeof NAME - 1},
    {(const uint8_t *)VERSION, sizeof VERSION - 1},
    0.0,
    10.0,
    {(const uint8_t *)INFO, sizeof INFO - 1},
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
