//! Helpers shared by the black-box tests live in `tests/tests/`.
