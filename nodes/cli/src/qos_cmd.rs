//! `convoy qos show FILE[::LIBRARY]`: the resolved profiles after inheritance, of one library
//! or (no `::LIBRARY`) of every library in the file.

use anyhow::Result;
use convoy_core::qos::QosSet;

use crate::args::QosShowArgs;

pub fn show(args: &QosShowArgs) -> Result<()> {
    for (i, set) in QosSet::load_all(&args.spec)?.iter().enumerate() {
        if i > 0 {
            println!();
        }
        print!("{set}");
    }
    Ok(())
}
