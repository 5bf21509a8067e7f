//! Module enablement as a pure function: merged `*Enabled` flags, then `enabled` scripts run by
//! the caller one module at a time, then the run / delete / purge lists.

/// The `*Enabled` flag of one module in every layer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlagLayers {
    pub common: Option<bool>,
    pub module_file: Option<bool>,
    pub config: Option<bool>,
    pub dynamic: Option<bool>,
    pub section_disabled: bool,
}
