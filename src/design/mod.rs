//! The multi-session designs: each drives sessions through
//! `crate::session`, returns a record and prints nothing (the wiring in
//! `app/` prints from what it returns, `crate::report` renders it).

pub(crate) mod choice;
pub(crate) mod confirm;
pub(crate) mod screen;
