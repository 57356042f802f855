//! Builder methods for the configuration structs, which are
//! `#[non_exhaustive]` so that fields can be added in a minor release:
//! outside this crate they are built from `default()` and these setters,
//! one per field and named after it (`KernelConfig::default().bind_ip(ip)`).

macro_rules! setters {
    ($ty:ident { $($field:ident: $t:ty),* $(,)? }) => {
        impl $ty {
            $(
                #[doc = concat!("With `", stringify!($field), "` set to `value`.")]
                #[must_use]
                pub fn $field(mut self, value: $t) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}

pub(crate) use setters;
