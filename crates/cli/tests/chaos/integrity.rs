//! Nothing read back from disk is trusted unchecked: committed parts, the journal, shards,
//! finished tables.
