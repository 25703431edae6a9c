//! A deliberately misbehaving DDS program: it writes payloads of other types under a convoy
//! topic name and type name, straight through rustdds (not convoy's layer), as a stray or
//! outdated program on the same domain would.
//!
//! usage: convoy-test-bad-writer DOMAIN TOPIC TYPE_NAME short|long COUNT

use std::any::Any;
use std::time::Duration;

use rustdds::policy::{History, Reliability};
use rustdds::{DomainParticipant, Publisher, QosPolicyBuilder, Topic, TopicDescription, TopicKind};
use serde::Serialize;

/// Too short for any convoy message with a u64 first field.
#[derive(Serialize)]
struct Short {
    frame: u16,
}

/// A Tick with members appended: decodes as a Tick only if leftovers are ignored.
#[derive(Serialize)]
struct Long {
    frame: u64,
    sim_time_ns: i64,
    dt_ns: i64,
    paused: bool,
    agents: Vec<String>,
    states: Vec<u8>,
    extra: [u64; 4],
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let [_, domain, topic, type_name, mode, count] = args.as_slice() else {
        return Err("usage: convoy-test-bad-writer DOMAIN TOPIC TYPE_NAME short|long COUNT".into());
    };
    let domain: u16 = domain.parse().map_err(|e| format!("domain: {e}"))?;
    let count: u64 = count.parse().map_err(|e| format!("count: {e}"))?;
    let participant = DomainParticipant::new(domain).map_err(|e| e.to_string())?;
    let qos = QosPolicyBuilder::new()
        .reliability(Reliability::Reliable {
            max_blocking_time: rustdds::Duration::from_secs(1),
        })
        .history(History::KeepLast { depth: 16 })
        // As convoy's clock profile requests: otherwise the reader would not match at all.
        .durability(rustdds::policy::Durability::TransientLocal)
        .build();
    let topic = participant
        .create_topic(topic.clone(), type_name.clone(), &qos, TopicKind::NoKey)
        .map_err(|e| e.to_string())?;
    let publisher = participant
        .create_publisher(&qos)
        .map_err(|e| e.to_string())?;
    // The writer must outlive the wait below: it is kept, boxed, until the end.
    let keep_alive = match mode.as_str() {
        "short" => write_all(&participant, &publisher, &topic, count, |i| Short {
            frame: i as u16,
        })?,
        "long" => write_all(&participant, &publisher, &topic, count, |i| Long {
            frame: i,
            sim_time_ns: 0,
            dt_ns: 0,
            paused: false,
            agents: vec![],
            states: vec![],
            extra: [7; 4],
        })?,
        other => return Err(format!("unknown mode '{other}'")),
    };
    println!("bad writer done");
    // Stay on the domain (the reader may still be matching us and fetching the samples from
    // our history) until the test closes our stdin or kills us.
    let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut Vec::new());
    drop(keep_alive);
    Ok(())
}

/// Creates a writer of `T` on `topic`, waits for a reader to match, and writes `count` samples
/// made by `sample` from their index; returns the writer.
fn write_all<T: Serialize + 'static>(
    participant: &DomainParticipant,
    publisher: &Publisher,
    topic: &Topic,
    count: u64,
    sample: impl Fn(u64) -> T,
) -> Result<Box<dyn Any>, String> {
    let w = publisher
        .create_datawriter_no_key_cdr::<T>(topic, None)
        .map_err(|e| e.to_string())?;
    wait_matched(participant, &topic.name())?;
    for i in 0..count {
        w.write(sample(i), None).map_err(|e| e.to_string())?;
    }
    Ok(Box::new(w))
}

fn wait_matched(participant: &DomainParticipant, topic: &str) -> Result<(), String> {
    for _ in 0..3000 {
        let readers = participant.discovered_readers();
        if readers
            .iter()
            .any(|r| r.subscription_topic_data.topic_name() == topic)
        {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Err("no reader matched within 15 s".into())
}
