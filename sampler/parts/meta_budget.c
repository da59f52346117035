#include "sampler/parts/meta_budget.h"

uint64_t meta_budget_used(const struct meta_budget *b)
{
    if (!b || !b->w)
        return 0;
    uint64_t all = b->w->words_written * 8;
    return all > b->not_meta ? all - b->not_meta : 0;
}

bool meta_budget_allows(struct meta_budget *b, uint64_t bytes)
{
    if (!b || !b->w)
        return true;
    if (meta_budget_used(b) + bytes <= b->max)
        return true;
    b->cut_records++;
    return false;
}

uint64_t meta_budget_table_left(const struct meta_budget *b, unsigned share)
{
    uint64_t left = meta_budget_symbols_left(b);
    if (b && b->w && share && left > b->max / share)
        left = b->max / share;
    return left;
}

uint64_t meta_budget_symbols_left(const struct meta_budget *b)
{
    if (!b || !b->w)
        return UINT64_MAX;
    uint64_t cap = b->max - b->max / 8, used = meta_budget_used(b);
    return used < cap ? cap - used : 0;
}
