//! Commands that write never write into their own source, another run, a user's folder or
//! through a symbolic link, and `--overwrite` removes only what a run wrote.
