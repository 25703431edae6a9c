//! `convoy qos show FILE[::LIBRARY]`: the resolved profiles after inheritance.

use anyhow::Result;
use convoy_core::qos::QosSet;

use crate::args::QosShowArgs;

pub fn show(args: &QosShowArgs) -> Result<()> {
    let set = QosSet::load(&args.spec)?;
    print!("{set}");
    Ok(())
}
