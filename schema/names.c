/* Names of the walk stop reasons (schema.h). */
#include <string.h>

#include "schema/schema.h"

const char *hvfxt_stop_name(unsigned stop)
{
    static const char *const names[] = {
        [HVFXT_STOP_NONE] = "none",
        [HVFXT_STOP_END] = "end",
        [HVFXT_STOP_MAX_DEPTH] = "max-depth",
        [HVFXT_STOP_UNMAPPED] = "unmapped",
        [HVFXT_STOP_BAD_FP] = "bad-fp",
        [HVFXT_STOP_NOT_UPWARD] = "not-upward",
        [HVFXT_STOP_DEFERRED] = "deferred",
        [HVFXT_STOP_RECORD_LIMIT] = "record-limit",
        [HVFXT_STOP_ERROR] = "error",
        [HVFXT_STOP_ABANDONED_TIMEOUT] = "abandoned-timeout",
        [HVFXT_STOP_ABANDONED_END] = "abandoned-end",
        [HVFXT_STOP_ABANDONED_FULL] = "abandoned-full",
        [HVFXT_STOP_NO_UNWIND_INFO] = "no-unwind-info",
        [HVFXT_STOP_UNWIND_RULE] = "unwind-rule",
    };
    return stop < sizeof(names) / sizeof(names[0]) ? names[stop] : "?";
}

bool hvfxt_module_name_is_placeholder(const char *name)
{
    return name && !strncmp(name, "[elf@0x", 7);
}

#define FIELD_INFO(NAME, bit, member, count, shape, wire, label, fmt)                              \
    {bit, HVFXT_SF_SHAPE_##shape, wire, label, HVFXT_SF_FMT_##fmt},
const struct hvfxt_sample_field_info hvfxt_sample_fields[HVFXT_SF_COUNT] = {
    HVFXT_SAMPLE_FIELDS(FIELD_INFO)};
#undef FIELD_INFO

const char *hvfxt_task_state_letter(uint64_t state)
{
    static const char *const letters[HVFXT_TASK_STATES] = {"R", "S", "D", "T", "t",
                                                           "X", "Z", "P", "I"};
    return state < HVFXT_TASK_STATES ? letters[state] : "?";
}

const char *hvfxt_task_state_name(uint64_t state)
{
    /* fs/proc/array.c, task_state_array */
    static const char *const names[HVFXT_TASK_STATES] = {"running", "sleeping",     "disk sleep",
                                                         "stopped", "tracing stop", "dead",
                                                         "zombie",  "parked",       "idle"};
    return state < HVFXT_TASK_STATES ? names[state] : "?";
}
