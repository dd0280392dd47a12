/*
 * critbench.h — the critic plugin ABI, version 1.
 *
 * A critic plugin is a shared library that exports one C function, `critbench_critic_v1`, which
 * returns a pointer to a static descriptor. The host loads the library once per run and never
 * unloads it.
 *
 * Rules of the boundary:
 *   - Every string crosses as UTF-8 bytes with an explicit length; nothing is NUL-terminated.
 *   - Whoever allocates a buffer frees it: the host copies a plugin's buffer and hands it back to
 *     the plugin's `free_buffer`.
 *   - Nothing unwinds across the boundary: a failure is a non-zero status plus a message.
 *   - Unless `CRITBENCH_FLAG_THREAD_SAFE` is set, the host never calls `critique` on one
 *     instance from two threads at once.
 *
 * Messages are JSON (see docs/REFERENCE.md, Critique and Plugins):
 *   create config:    any JSON value, `{}` when the experiment gives none
 *   critique request: {"request_version": 1, "task": {...}, "draft": "...", "round": 0}
 *   critique answer:  {"critique_version": 1, "score": 7.5, "dimensions": {...},
 *                      "issues": [...], "fatal_issues": [...],
 *                      "suggestions": [{"dimension": "...", "target": "...", "edit": "..."}],
 *                      "passed": false, "rationale": "..."}
 *                     `critique_version` (CRITBENCH_CRITIQUE_VERSION) may be left out and means 1;
 *                     the host rejects an answer of a version it does not know.
 *                     `score` may be left out when `dimensions` is given; the host then uses
 *                     their mean. The host, never the critic, decides pass.
 *                     Each entry of `issues` and `fatal_issues` is either a string or a typed
 *                     issue {"text": "...", "type": "missing_evidence"}: `type` is a short
 *                     machine-readable name (declare it in the plugin's info, below); strategy
 *                     memory learns which types a revision fixed and turns them into hints.
 *   plugin info:      {"info_version": 1,
 *                      "issue_types": [{"name": "missing_evidence",
 *                                       "hint": "Cite the ids of the passages you use."}],
 *                      "requires": ["chat"],
 *                      "hints": {"requires": "...", "not_found": "..."}}
 *                     What the plugin declares about itself, returned by the optional symbol
 *                     `critbench_critic_info_v1` (a plugin without it declares nothing).
 *                     `issue_types`: the types its issues carry, each with the instruction the
 *                     strategy memory gives a writer that kept making that mistake. `requires`:
 *                     the host services it cannot work without; the host refuses to run it where
 *                     they are not offered, and shows `hints.requires`. `hints.not_found`: how to
 *                     build or get the plugin, shown when a name does not resolve; since a
 *                     missing library cannot say it, the same JSON may sit in a plugin directory
 *                     as `NAME.plugin.json`. Every field but `info_version` may be left out;
 *                     fields a host does not know are ignored, so later versions only add fields.
 */
#ifndef CRITBENCH_H
#define CRITBENCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CRITBENCH_ABI_VERSION 1u
/* The version of the critique answer (`critique_version`). */
#define CRITBENCH_CRITIQUE_VERSION 1u
/* The version of the plugin info JSON (`info_version`). */
#define CRITBENCH_INFO_VERSION 1u

/* Descriptor flags. */
/* `critique` may run on one instance from many threads at once. */
#define CRITBENCH_FLAG_THREAD_SAFE 1u
/* The critique depends on the loop's policy, so recorded loops cannot be replayed under another. */
#define CRITBENCH_FLAG_POLICY_DEPENDENT 2u

/* Status codes. */
#define CRITBENCH_OK 0
#define CRITBENCH_ERROR 1

/* Borrowed UTF-8 text. */
typedef struct critbench_str {
    const uint8_t *ptr;
    size_t len;
} critbench_str;

/* Bytes owned by whoever allocated them; freed only by that side's `free_buffer`. */
typedef struct critbench_buffer {
    uint8_t *ptr;
    size_t len;
} critbench_buffer;

/* Services the host offers a plugin for the lifetime of the run. */
typedef struct critbench_host_v1 {
    uint32_t abi_version;
    /* sizeof(critbench_host_v1) as the host knows it: later versions only append fields. */
    uint32_t size;
    /* The run this host table belongs to: pass it back as `call`'s first argument. Two runs in one
     * process hand their plugins different tables and contexts, and never see each other's
     * services. */
    void *context;
    /* Calls the host service `service` with a JSON request. On CRITBENCH_OK `*out` holds the JSON
     * answer, otherwise an error message; either way release it with `free_buffer` below.
     * Services (an unknown name answers an error):
     *   "chat" (when the experiment has an [openai] table): asks the judge model.
     *     request: {"messages": [{"role": "system"|"user"|"assistant", "content": "..."}],
     *               "response_format": {"type": "json_object"}}   (response_format optional)
     *     answer:  {"content": "...", "tokens_in": n, "tokens_out": n, "cached": bool}
     *   The host owns the model, sampling, concurrency, retries and cache; it keys the cache by
     *   the critique being made (task, epoch, round, attempt): it matches a call to the critique in
     *   progress on the calling thread, so call it from `critique`'s thread, during `critique`. */
    int32_t (*call)(void *context, critbench_str service, critbench_str request, critbench_buffer *out);
    void (*free_buffer)(critbench_buffer buffer);
} critbench_host_v1;

typedef struct critbench_critic_descriptor_v1 {
    uint32_t abi_version; /* CRITBENCH_ABI_VERSION */
    uint32_t flags;       /* CRITBENCH_FLAG_* */
    critbench_str name;
    critbench_str version;
    double score_min;
    double score_max;
    /* The four functions must all be set: a descriptor with a NULL one is refused when the plugin
     * is loaded. */
    /* Makes an instance from a JSON config. On success returns CRITBENCH_OK and sets `*instance`
     * to a non-NULL pointer (the host passes it to `critique` and `destroy`; a plugin without
     * state can point at any static byte); a NULL instance is an error. On error, returns
     * non-zero and puts a message in `*error` (allocated by the plugin). `host` outlives the
     * instance. */
    int32_t (*create)(critbench_str config, const critbench_host_v1 *host, void **instance,
                      critbench_buffer *error);
    /* Critiques one draft. `*out` receives the critique JSON on CRITBENCH_OK, or an error message
     * otherwise; both are allocated by the plugin. */
    int32_t (*critique)(void *instance, critbench_str request, critbench_buffer *out);
    void (*destroy)(void *instance);
    /* Frees a buffer this plugin allocated. */
    void (*free_buffer)(critbench_buffer buffer);
} critbench_critic_descriptor_v1;

/* The one symbol a plugin must export. */
const critbench_critic_descriptor_v1 *critbench_critic_v1(void);

/* Optional: the plugin's info JSON (see the top of this file), static UTF-8 text. A plugin that
 * does not export it, or returns an empty string, declares nothing. */
critbench_str critbench_critic_info_v1(void);

#ifdef __cplusplus
}
#endif

#endif /* CRITBENCH_H */
