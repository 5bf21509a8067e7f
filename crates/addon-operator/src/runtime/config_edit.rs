//! A valid config edit made by others, applied to memory and handed to the core's
//! lifecycle decision (`addon_core::lifecycle::config_edited`), whose tasks are queued here.

use addon_core::config::Config;
use addon_core::lifecycle;
use addon_core::names::ModuleName;

use super::{Shared, decisions};
use addon_core::error::error_chain;

/// A valid edit: global section or `*Enabled` flags changed ⇒ converge (and failing runs of
/// modules the edit disables are dropped); only module sections changed ⇒ run those modules.
pub fn apply_config(shared: &Shared, config: Config) {
    let mut st = shared.lock();
    let mut check: Vec<ModuleName> = st.enabled.clone();
    check.extend(
        st.module_order
            .iter()
            .filter(|m| config.module_enabled(m) == Some(true) && !st.enabled.contains(m))
            .cloned(),
    );
    if let Err(e) = st.store.check_config(&config, &check) {
        shared.metrics.config_values_error();
        super::admin::config_refused(shared, &e);
        tracing::error!(
            error = %error_chain(&e),
            "config edit is invalid; the previous config stays in use and no task is queued"
        );
        return;
    }
    let change = st.store.set_config(config);
    let disabled: Vec<ModuleName> = (st.store.all_flag_layers().into_iter())
        .filter(|(_, flags)| !flags.enabled())
        .map(|(name, _)| name)
        .collect();
    let decision = lifecycle::config_edited(decisions::view(&st), &change, &disabled);
    decisions::enqueue(shared, st, decision);
}
