//! sea-orm entities; private to the store so no other crate depends on table shapes.

pub mod inbox_message;
