//! A critic's pipe is checked: an answer lands on the request it answers or is an error, and a
//! command critic's whole process group goes with it.
