/* A record into the vCPU's own ring, encoded in place (schema/encode.h): the exit path's one
 * writer. A full ring drops the record and counts it (fxt/ring.h); the drain thread writes a
 * loss record before the next one it moves. */
#include "sampler/exit/core.h"

void exit_emit(struct exit_vcpu *sv, const struct hvfxt_sample *smp)
{
    size_t n = hvfxt_sample_words(smp);
    uint64_t *slot = fxt_ring_reserve(&sv->ring, (uint32_t)n, smp->ts);
    if (!slot)
        return; /* dropped and counted by the ring; a loss record will say so */
    size_t w = hvfxt_enc_sample(slot, n, smp);
    fxt_ring_commit(&sv->ring, (uint32_t)w);
    sv->st.records++;
}

