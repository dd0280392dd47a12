/*
 * critbench.h — the critic plugin ABI (version 3).
 *
 * A critic plugin is a shared library that exports one C function, `critbench_critic`, which
 * returns a pointer to a static descriptor (`critbench_critic_descriptor`): what the critic is,
 * what it declares about itself, and the functions the host calls. The host loads the library
 * once per run and never unloads it.
 *
 * A critic either reads each request whole (`critique`: the request carries its task) or also
 * reads a task once and then each round's draft alone (`open_task`, `critique_task`,
 * `close_task`); it leaves those three NULL for the first. Earlier ABIs (versions 1 and 2, the
 * symbols `critbench_critic_v1` and `critbench_critic_v2`) are refused with a message saying so.
 *
 * Rules of the boundary:
 *   - Every string crosses as UTF-8 bytes with an explicit length; nothing is NUL-terminated.
 *   - Whoever allocates a buffer frees it: the host copies a plugin's buffer and hands it back to
 *     the plugin's `free_buffer`.
 *   - Nothing unwinds across the boundary: a failure is a non-zero status plus a message.
 *   - Unless `CRITBENCH_FLAG_THREAD_SAFE` is set, the host never calls into one instance
 *     (`critique`, `open_task`, `critique_task`, `close_task`) from two threads at once. A task
 *     handle is used by one thread at a time, not always the same one.
 *   - A task handle holds what its task says, never the state of one loop: the host may critique
 *     the rounds of several loops of the task (its arms, configs and epochs) through one handle,
 *     interleaved, each round's request saying its own round and draft.
 *
 * Messages are JSON (see docs/REFERENCE.md, Critique and Plugins):
 *   create config:    any JSON value, `{}` when the experiment gives none
 *   critique request: {"request_version": 1, "task": {...}, "draft": "...", "round": 0}
 *   task request:     {"request_version": 2, "round": 0, "draft": "..."}   (`critique_task`: the
 *                     task is the one its handle was opened with)
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
 *                     What the plugin declares about itself, the descriptor's `info` (empty text
 *                     declares nothing). `issue_types`: the types its issues carry, each with the
 *                     instruction the strategy memory gives a writer that kept making that
 *                     mistake. `requires`: the host services it cannot work without; the host
 *                     refuses to run it where they are not offered, and shows `hints.requires`.
 *                     `hints.not_found`: how to build or get the plugin, shown when a name does
 *                     not resolve; since a missing library cannot say it, the same JSON may sit in
 *                     a plugin directory as `NAME.plugin.json`. Every field but `info_version` may
 *                     be left out; fields a host does not know are ignored, so later versions only
 *                     add fields.
 */
#ifndef CRITBENCH_H
#define CRITBENCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this ABI: the descriptor's and the host table's `abi_version`. */
#define CRITBENCH_ABI_VERSION 3u
/* The version of the request `critique_task` receives. */
#define CRITBENCH_TASK_REQUEST_VERSION 2u
/* The version of the critique answer (`critique_version`). */
#define CRITBENCH_CRITIQUE_VERSION 1u
/* The version of the plugin info JSON (`info_version`). */
#define CRITBENCH_INFO_VERSION 1u

/* Descriptor flags. */
/* The plugin may be called on one instance from many threads at once. */
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
typedef struct critbench_host {
    uint32_t abi_version; /* CRITBENCH_ABI_VERSION */
    /* sizeof(critbench_host) as the host knows it: later versions only append fields. */
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
     *     answer:  {"content": "...", "tokens_in": n, "tokens_out": n, "cached": bool,
     *              "truncated": bool, "max_tokens": n}
     *              (truncated: the server cut the answer at max_tokens, which is null when the
     *              server's default applied)
     *   The host owns the model, sampling, concurrency, retries and cache; it keys the cache by
     *   the critique being made (task, epoch, round, attempt): it matches a call to the critique in
     *   progress on the calling thread, so call it from the thread of the call it serves
     *   (`critique`, `open_task` or `critique_task`), during that call. */
    int32_t (*call)(void *context, critbench_str service, critbench_str request, critbench_buffer *out);
    void (*free_buffer)(critbench_buffer buffer);
} critbench_host;

typedef struct critbench_critic_descriptor {
    uint32_t abi_version; /* CRITBENCH_ABI_VERSION */
    uint32_t flags;       /* CRITBENCH_FLAG_* */
    critbench_str name;
    critbench_str version;
    double score_min;
    double score_max;
    /* The plugin's info JSON (see the top of this file), static; empty declares nothing. */
    critbench_str info;
    /* The next four functions must all be set: a descriptor with a NULL one is refused when the
     * plugin is loaded. */
    /* Makes an instance from a JSON config. On success returns CRITBENCH_OK and sets `*instance`
     * to a non-NULL pointer (the host passes it to every other function; a plugin without state
     * can point at any static byte); a NULL instance is an error. On error, returns non-zero and
     * puts a message in `*error` (allocated by the plugin). `host` outlives the instance. */
    int32_t (*create)(critbench_str config, const critbench_host *host, void **instance, critbench_buffer *error);
    /* Critiques one draft of a whole request (task included). `*out` receives the critique JSON on
     * CRITBENCH_OK, or an error message otherwise; both are allocated by the plugin. */
    int32_t (*critique)(void *instance, critbench_str request, critbench_buffer *out);
    /* The host closes every task handle of an instance before it destroys the instance. */
    void (*destroy)(void *instance);
    /* Frees a buffer this plugin allocated. */
    void (*free_buffer)(critbench_buffer buffer);
    /* The next three are set together or left NULL together (a descriptor with one or two of them
     * is refused). NULL: every request the host sends goes to `critique`, task included. Set: the
     * host opens a loop's task before its first critique and sends every round and every retry
     * through the handle, with only the round and the draft; `critique` still answers whole
     * requests (the host sends them outside loops), and must answer one as `open_task` on its task
     * and then `critique_task` would. */
    /* Reads a task (the JSON a whole request holds as "task"). On CRITBENCH_OK sets `*task_handle`
     * to a non-NULL handle; on error returns non-zero with a message in `*error`, which the host
     * records as that critique's error (and opens the task again for the next attempt). */
    int32_t (*open_task)(void *instance, critbench_str task, void **task_handle, critbench_buffer *error);
    /* Critiques one draft of an opened task: `request` is a task request (see the top of this
     * file). `*out` as for `critique`. */
    int32_t (*critique_task)(void *instance, void *task_handle, critbench_str request, critbench_buffer *out);
    /* Releases a handle made by `open_task`; the host never uses it afterwards. */
    void (*close_task)(void *instance, void *task_handle);
} critbench_critic_descriptor;

/* The one symbol a plugin exports. */
const critbench_critic_descriptor *critbench_critic(void);

#ifdef __cplusplus
}
#endif

#endif /* CRITBENCH_H */
