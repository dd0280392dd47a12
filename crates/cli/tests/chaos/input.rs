//! Input that would eat the machine or be read wrongly is refused, naming where it is: limits,
//! duplicate keys, thresholds outside the critic's range, secrets in text about to be written.
