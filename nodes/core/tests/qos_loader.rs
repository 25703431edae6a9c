//! The DDS-XML QoS loader against the shipped files, inheritance fixtures and one broken file
//! per kind of error, each error checked for its exact `file:line:` and its key words.

use std::path::{Path, PathBuf};
use std::time::Duration;

use convoy_core::qos::{
    DestinationOrder, Durability, EndpointQos, History, Liveliness, LivelinessKind, Ownership,
    QosError, QosSet, QosSpec, Reliability, ResourceLimits, DEFAULT_MAX_INSTANCES,
    LENGTH_UNLIMITED,
};
use convoy_core::topics::TopicClass;

const LABEL: &str = "qos/x.xml";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/qos_fixtures")
        .join(name)
}

fn load(spec: &str) -> QosSet {
    let spec = QosSpec::parse(spec);
    QosSet::load(&spec).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

fn error(xml: &str) -> QosError {
    match QosSet::from_str(xml, LABEL, None) {
        Ok(_) => panic!("loaded without error:\n{xml}"),
        Err(e) => e,
    }
}

/// The error starts with `qos/x.xml:LINE: ` and holds every one of `words`.
fn assert_error(e: &QosError, line: u32, words: &[&str]) {
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("{LABEL}:{line}: ")),
        "expected {LABEL}:{line}: ..., got: {text}"
    );
    assert_eq!(e.line(), Some(line), "{text}");
    for word in words {
        assert!(text.contains(word), "'{word}' missing from: {text}");
    }
}

fn reliable(ms: u64) -> Reliability {
    Reliability::Reliable {
        max_blocking_time: Duration::from_millis(ms),
    }
}

// ---------------------------------------------------------------- shipped files

#[test]
fn every_shipped_library_resolves_every_class_profile() {
    let mut libraries = 0;
    for file in ["convoy.xml", "ros2.xml", "experiments.xml"] {
        let spec = QosSpec {
            path: repo().join("qos").join(file),
            library: None,
        };
        let sets = QosSet::load_all(&spec).unwrap_or_else(|e| panic!("{e}"));
        for set in sets {
            libraries += 1;
            assert!(set.libraries().iter().any(|l| l == set.library()));
            for class in TopicClass::ALL {
                let profile = set
                    .for_class(class)
                    .unwrap_or_else(|e| panic!("{}: {e}", set.source()));
                assert_eq!(profile.name, class.profile_name());
                // Every endpoint maps to rustdds with explicit history and limits, and
                // reliable streams that are not lockstep classes keep depth >= 8.
                let entries = profile.writer.iter().chain(&profile.reader);
                for (_, qos) in entries.chain([(None, profile.topic.clone())].iter()) {
                    let dds = qos.to_rustdds();
                    assert!(dds.history().is_some() && dds.resource_limits().is_some());
                    let lockstep = matches!(
                        class,
                        TopicClass::Clock
                            | TopicClass::Barrier
                            | TopicClass::Status
                            | TopicClass::Assignment
                    );
                    if let (false, Reliability::Reliable { .. }, History::KeepLast(d)) =
                        (lockstep, qos.reliability, qos.history)
                    {
                        assert!(d >= 8, "{}::{class}: reliable depth {d}", set.source());
                    }
                }
            }
            // Display covers every profile.
            let shown = set.to_string();
            for profile in set.profiles() {
                assert!(
                    shown.contains(&format!("profile {} (line {})", profile.name, profile.line))
                );
            }
        }
    }
    assert_eq!(
        libraries, 5,
        "convoy, ros2, best_effort, reliable_keep_all, deadline_watch"
    );
}

#[test]
fn convoy_defaults_follow_the_design_table() {
    let set = load(&format!(
        "{}::convoy",
        repo().join("qos/convoy.xml").display()
    ));
    let check = |class: TopicClass, rel: Reliability, dur: Durability, depth: u32| {
        let p = set.for_class(class).unwrap_or_else(|e| panic!("{e}"));
        for qos in [&p.topic, p.writer_for("t"), p.reader_for("t")] {
            assert_eq!(qos.reliability, rel, "{class}");
            assert_eq!(qos.durability, dur, "{class}");
        }
        assert_eq!(
            p.reader_for("t").history,
            History::KeepLast(depth),
            "{class}"
        );
        p
    };
    use Durability::*;
    check(TopicClass::Clock, reliable(1000), TransientLocal, 1);
    check(TopicClass::Barrier, reliable(1000), Volatile, 1);
    let status = check(TopicClass::Status, reliable(1000), TransientLocal, 1);
    assert_eq!(
        status.reader_for("convoy/nodes").liveliness,
        Some(Liveliness {
            kind: LivelinessKind::Automatic,
            lease_duration: Duration::from_secs(2)
        })
    );
    check(TopicClass::State, reliable(100), Volatile, 16);
    check(TopicClass::Control, reliable(100), Volatile, 16);
    let assignment = check(TopicClass::Assignment, reliable(1000), TransientLocal, 1);
    assert_eq!(
        assignment.writer_for("convoy/assignments").history,
        History::KeepLast(1024)
    );
    let sensor = check(TopicClass::Sensor, reliable(100), Volatile, 8);
    assert_eq!(sensor.base_chain, ["convoy::reliable_stream"]);
    check(TopicClass::World, reliable(100), Volatile, 32);
    // Bench is the reliable reference: KEEP_ALL both ways, limits above any bench burst.
    let bench = set
        .for_class(TopicClass::Bench)
        .unwrap_or_else(|e| panic!("{e}"));
    for qos in [
        bench.writer_for("convoy/bench/ping"),
        bench.reader_for("convoy/bench/ping"),
    ] {
        assert_eq!(qos.reliability, reliable(1000));
        assert_eq!(qos.history, History::KeepAll);
        assert_eq!(qos.resource_limits.max_samples, 100_000);
    }

    // The compiled-in copy is the same file.
    let builtin = QosSet::builtin();
    assert_eq!(builtin.source(), "qos/convoy.xml::convoy");
    let loaded: Vec<_> = set.profiles().cloned().collect();
    let compiled: Vec<_> = builtin.profiles().cloned().collect();
    assert_eq!(loaded, compiled);
}

#[test]
fn ros2_and_experiment_libraries_say_what_they_promise() {
    let ros2 = load(&repo().join("qos/ros2.xml").display().to_string());
    assert_eq!(
        ros2.source(),
        format!("{}::ros2", repo().join("qos/ros2.xml").display())
    );
    let default = ros2
        .profile("ros2_default")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(default.topic.reliability, reliable(100));
    assert_eq!(default.topic.history, History::KeepLast(10));
    let sensor_data = ros2
        .profile("ros2_sensor_data")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sensor_data.topic.reliability, Reliability::BestEffort);
    assert_eq!(sensor_data.topic.history, History::KeepLast(5));
    let sensor = ros2
        .for_class(TopicClass::Sensor)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sensor.base_chain, ["ros2::ros2_sensor_data"]);
    assert_eq!(
        sensor.reader_for("convoy/sensor/a/b").reliability,
        Reliability::BestEffort
    );
    for class in [
        TopicClass::Clock,
        TopicClass::Barrier,
        TopicClass::Status,
        TopicClass::Assignment,
    ] {
        let p = ros2.for_class(class).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            matches!(p.reader_for("x").reliability, Reliability::Reliable { .. }),
            "{class}"
        );
    }

    let experiments = repo().join("qos/experiments.xml").display().to_string();
    let best_effort = load(&format!("{experiments}::best_effort"));
    for class in TopicClass::ALL {
        let p = best_effort
            .for_class(class)
            .unwrap_or_else(|e| panic!("{e}"));
        let be = matches!(
            class,
            TopicClass::State | TopicClass::Control | TopicClass::Sensor | TopicClass::Bench
        );
        assert_eq!(
            p.writer_for("x").reliability == Reliability::BestEffort,
            be,
            "{class}"
        );
    }

    let keep_all = load(&format!("{experiments}::reliable_keep_all"));
    for class in TopicClass::ALL {
        let p = keep_all.for_class(class).unwrap_or_else(|e| panic!("{e}"));
        for qos in [p.writer_for("x"), p.reader_for("x")] {
            assert_eq!(qos.history, History::KeepAll, "{class}");
            assert!(
                matches!(qos.reliability, Reliability::Reliable { .. }),
                "{class}"
            );
            assert!(qos.resource_limits.max_samples <= 4096, "{class}");
            assert_ne!(qos.resource_limits.max_samples, LENGTH_UNLIMITED);
        }
    }
    let sensor = keep_all
        .for_class(TopicClass::Sensor)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        sensor.writer_for("x").resource_limits,
        ResourceLimits {
            max_samples: 256,
            max_instances: 1024,
            max_samples_per_instance: 256
        }
    );

    let watch = load(&format!("{experiments}::deadline_watch"));
    let state = watch
        .for_class(TopicClass::State)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        state.writer_for("convoy/agent/a/state").deadline,
        Some(Duration::from_millis(500))
    );
    assert_eq!(
        state.reader_for("convoy/agent/a/state").deadline,
        Some(Duration::from_millis(500))
    );
    let sensor = watch
        .for_class(TopicClass::Sensor)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        sensor
            .reader_for("convoy/sensor/ego/lidar")
            .time_based_filter,
        Some(Duration::from_millis(50))
    );
    assert_eq!(
        sensor
            .reader_for("convoy/sensor/ego/camera_front")
            .time_based_filter,
        Some(Duration::from_millis(100))
    );
    assert_eq!(
        sensor
            .writer_for("convoy/sensor/ego/lidar")
            .time_based_filter,
        None
    );
    // Cross-library base: deadline_watch's lockstep classes are best_effort's.
    let clock = watch
        .for_class(TopicClass::Clock)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(clock.base_chain, ["best_effort::clock"]);
    assert_eq!(
        clock.reader_for("convoy/clock").durability,
        Durability::TransientLocal
    );
}

// ---------------------------------------------------------------- inheritance

#[test]
fn multi_level_inheritance_stacks_per_leaf() {
    let set = load(&format!("{}::base", fixture("inheritance.xml").display()));
    assert_eq!(set.libraries(), ["base", "derived"]);
    let leaf = set.profile("leaf").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(leaf.base_chain, ["base::middle", "base::root"]);

    // topic: reliability and budget from root, durability and depth from middle.
    assert_eq!(leaf.topic.reliability, reliable(500));
    assert_eq!(leaf.topic.durability, Durability::TransientLocal);
    assert_eq!(leaf.topic.history, History::KeepLast(16));
    assert_eq!(leaf.topic.latency_budget, Some(Duration::from_millis(1)));
    assert_eq!(leaf.topic.ownership, Ownership::Shared);

    // writer: root's lifespan, leaf's own depth and ownership strength; limits follow depth.
    let writer = leaf.writer_for("convoy/agent/ego/state");
    let expected = EndpointQos {
        reliability: reliable(500),
        durability: Durability::TransientLocal,
        history: History::KeepLast(32),
        resource_limits: ResourceLimits {
            max_samples: 32 * DEFAULT_MAX_INSTANCES,
            max_instances: DEFAULT_MAX_INSTANCES,
            max_samples_per_instance: 32,
        },
        deadline: None,
        time_based_filter: None,
        lifespan: Some(Duration::from_secs(3)),
        liveliness: None,
        ownership: Ownership::Exclusive(7),
        destination_order: DestinationOrder::ByReceptionTimestamp,
        latency_budget: Some(Duration::from_millis(1)),
    };
    assert_eq!(writer, &expected);

    // The <topic_filter> element form: the filtered entry is the unfiltered one plus its own.
    let car = leaf.writer_for("convoy/agent/car_1/state");
    assert_eq!(car.deadline, Some(Duration::from_secs(1)));
    assert_eq!(car.history, History::KeepLast(32));
    assert_eq!(car.ownership, Ownership::Exclusive(7));
    let car_reader = leaf.reader_for("convoy/agent/car_1/state");
    assert_eq!(car_reader.deadline, Some(Duration::from_secs(2)));
    assert_eq!(car_reader.ownership, Ownership::Exclusive(0));
    assert_eq!(car_reader.history, History::KeepLast(16));
    // '?' is one character: car_12 falls through to the unfiltered reader.
    assert_eq!(leaf.reader_for("convoy/agent/car_12/state").deadline, None);

    // The base's attribute-form filter survives two levels, with the levels above applied.
    let sensor = leaf.reader_for("convoy/sensor/ego/cam");
    assert_eq!(sensor.time_based_filter, Some(Duration::from_millis(20)));
    assert_eq!(sensor.durability, Durability::TransientLocal);
    assert_eq!(sensor.ownership, Ownership::Exclusive(0));
    assert_eq!(leaf.reader_for("convoy/clock").time_based_filter, None);

    // Order: own filters, then the base's, then the unfiltered entry.
    let filters: Vec<Option<&str>> = leaf.reader.iter().map(|(f, _)| f.as_deref()).collect();
    assert_eq!(
        filters,
        [
            Some("convoy/agent/car_?/state"),
            Some("convoy/sensor/*"),
            None
        ]
    );

    // root's topic_qos reached its readers; its datawriter_qos lifespan did not.
    let root = set.profile("root").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(root.reader_for("x").history, History::KeepLast(4));
    assert_eq!(root.reader_for("x").lifespan, None);
    assert_eq!(root.writer_for("x").lifespan, Some(Duration::from_secs(3)));
}

#[test]
fn cross_library_base_and_derived_topic_qos_override_the_base_writer() {
    let set = load(&format!(
        "{}::derived",
        fixture("inheritance.xml").display()
    ));
    assert_eq!(set.library(), "derived");
    let p = set
        .profile("best_effort_leaf")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.base_chain, ["base::leaf", "base::middle", "base::root"]);
    let writer = p.writer_for("convoy/agent/ego/state");
    // The derived profile's topic_qos applies on top of everything the base resolved to...
    assert_eq!(writer.reliability, Reliability::BestEffort);
    assert_eq!(writer.durability, Durability::Volatile);
    // ...and leaves the rest as the base had it.
    assert_eq!(writer.history, History::KeepLast(32));
    assert_eq!(writer.ownership, Ownership::Exclusive(7));
    assert_eq!(writer.lifespan, Some(Duration::from_secs(3)));
    assert_eq!(
        p.writer_for("convoy/agent/car_3/state").deadline,
        Some(Duration::from_secs(1))
    );
    // The base library's profiles are not part of this set.
    assert!(set.profile("leaf").is_err());
}

#[test]
fn writer_and_reader_qos_override_topic_qos_in_one_profile() {
    let xml = r#"<dds><qos_library name="l">
  <qos_profile name="p">
    <datareader_qos><history><depth>3</depth></history></datareader_qos>
    <topic_qos>
      <reliability><kind>RELIABLE_RELIABILITY_QOS</kind></reliability>
      <history><kind>KEEP_LAST_HISTORY_QOS</kind><depth>9</depth></history>
      <resource_limits><max_instances>LENGTH_UNLIMITED</max_instances></resource_limits>
    </topic_qos>
    <datawriter_qos><durability><kind>TRANSIENT_LOCAL_DURABILITY_QOS</kind></durability></datawriter_qos>
  </qos_profile>
  <qos_profile name="defaults"/>
</qos_library></dds>"#;
    let set = QosSet::from_str(xml, LABEL, None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(set.source(), "qos/x.xml::l");
    let p = set.profile("p").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.reader_for("t").history, History::KeepLast(3));
    assert_eq!(p.reader_for("t").durability, Durability::Volatile);
    assert_eq!(p.writer_for("t").history, History::KeepLast(9));
    assert_eq!(p.writer_for("t").durability, Durability::TransientLocal);
    assert_eq!(
        p.writer_for("t").resource_limits,
        ResourceLimits {
            max_samples: LENGTH_UNLIMITED,
            max_instances: LENGTH_UNLIMITED,
            max_samples_per_instance: 9
        }
    );
    // An empty profile is DDS's defaults: reliable writers, best-effort readers.
    let d = set.profile("defaults").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(d.writer_for("t"), &EndpointQos::writer_default());
    assert_eq!(d.reader_for("t"), &EndpointQos::default());
    assert_eq!(d.topic, EndpointQos::default());
}

#[test]
fn durations_accept_the_standard_constants() {
    let xml = r#"<dds><qos_library name="l"><qos_profile name="p">
  <topic_qos>
    <reliability><kind>RELIABLE_RELIABILITY_QOS</kind>
      <max_blocking_time><sec>DURATION_INFINITE_SEC</sec><nanosec>DURATION_INFINITE_NSEC</nanosec></max_blocking_time>
    </reliability>
    <deadline><period><sec>DURATION_INFINITY</sec></period></deadline>
    <latency_budget><duration><sec>DURATION_ZERO_SEC</sec><nanosec>DURATION_ZERO_NSEC</nanosec></duration></latency_budget>
    <liveliness><lease_duration><sec> 1 </sec><nanosec>
      250000000
    </nanosec></lease_duration></liveliness>
  </topic_qos>
</qos_profile></qos_library></dds>"#;
    let set = QosSet::from_str(xml, LABEL, None).unwrap_or_else(|e| panic!("{e}"));
    let p = set.profile("p").unwrap_or_else(|e| panic!("{e}"));
    let qos = p.writer_for("t");
    assert_eq!(
        qos.reliability,
        Reliability::Reliable {
            max_blocking_time: convoy_core::qos::INFINITE
        }
    );
    assert_eq!(qos.deadline, None);
    assert_eq!(qos.latency_budget, None);
    assert_eq!(
        qos.liveliness,
        Some(Liveliness {
            kind: LivelinessKind::Automatic,
            lease_duration: Duration::from_millis(1250)
        })
    );
    assert_eq!(
        qos.to_rustdds().reliable_max_blocking_time(),
        Some(rustdds::Duration::INFINITE)
    );
}

#[test]
fn display_shows_chain_filters_and_every_policy() {
    let set = load(&format!("{}::base", fixture("inheritance.xml").display()));
    let text = set.to_string();
    assert!(text.contains("profile leaf (line "), "{text}");
    assert!(text.contains("base: base::middle -> base::root"), "{text}");
    assert!(
        text.contains("reader (topic_filter 'convoy/sensor/*'):"),
        "{text}"
    );
    assert!(text.contains("writer (other topics):"), "{text}");
    assert!(
        text.contains("ownership          EXCLUSIVE (strength 7)"),
        "{text}"
    );
    for policy in [
        "reliability",
        "durability",
        "history",
        "resource_limits",
        "deadline",
        "time_based_filter",
        "lifespan",
        "liveliness",
        "ownership",
        "destination_order",
        "latency_budget",
    ] {
        assert!(text.contains(&format!("    {policy} ")), "{policy} missing");
    }
}

// ---------------------------------------------------------------- errors, one per kind

#[test]
fn unknown_policy_names_file_line_and_the_known_ones() {
    let path = fixture("unknown_policy.xml");
    let e = match QosSet::load(&QosSpec::parse(&path.display().to_string())) {
        Ok(_) => panic!("loaded"),
        Err(e) => e,
    };
    let text = e.to_string();
    assert!(
        text.starts_with(&format!(
            "{}:6: unknown policy 'deadlin' in <datareader_qos> (known: reliability, ",
            path.display()
        )),
        "{text}"
    );
    assert!(text.contains("time_based_filter"), "{text}");
    assert!(matches!(e, QosError::UnknownElement { .. }));
}

#[test]
fn unknown_elements_and_attributes() {
    let e = error("<dds>\n<qos_library name=\"l\">\n<qos_profile name=\"p\">\n<topic_qos><history>\n<dept>3</dept></history></topic_qos></qos_profile></qos_library></dds>");
    assert_error(
        &e,
        5,
        &["unknown element 'dept' in <history>", "known: kind, depth"],
    );

    let e = error("<dds>\n<qos_library name=\"l\">\n<qos_profile name=\"p\"\n   is_default_qos=\"true\"/></qos_library></dds>");
    assert_error(
        &e,
        4,
        &[
            "unknown attribute 'is_default_qos' on <qos_profile>",
            "known: name, base_name",
        ],
    );
    assert!(matches!(e, QosError::UnknownAttribute { .. }));

    let e = error("<dds>\n<qos_library name=\"l\">\n<profile name=\"p\"/></qos_library></dds>");
    assert_error(
        &e,
        3,
        &["unknown element 'profile' in <qos_library>", "qos_profile"],
    );

    let e = error("<qos>\n</qos>");
    assert_error(&e, 1, &["unknown element 'qos'", "dds"]);

    let e = error("<dds>\n<qos_library name=\"l\">\n<qos_profile name=\"p\">\nreliable</qos_profile></qos_library></dds>");
    assert_error(&e, 3, &["unexpected text 'reliable' in <qos_profile>"]);
    assert!(matches!(e, QosError::UnexpectedText { .. }));

    let e = error("<dds>\n<qos_library>\n</qos_library></dds>");
    assert_error(&e, 2, &["<qos_library> needs a 'name' attribute"]);
    assert!(matches!(e, QosError::MissingAttribute { .. }));

    let e = error("<dds>\n<types/>\n</dds>");
    assert_error(&e, 2, &["<types>", "not supported by convoy"]);
}

#[test]
fn bad_enum_value_lists_the_allowed_ones() {
    let e = error(
        "<dds><qos_library name=\"l\"><qos_profile name=\"p\">\n<datawriter_qos>\n<reliability>\n  <kind> RELIABLE </kind>\n</reliability></datawriter_qos></qos_profile></qos_library></dds>",
    );
    assert_error(
        &e,
        4,
        &[
            "bad value 'RELIABLE' for <kind> in <reliability>",
            "BEST_EFFORT_RELIABILITY_QOS, RELIABLE_RELIABILITY_QOS",
        ],
    );
    assert!(matches!(e, QosError::BadValue { .. }));
}

#[test]
fn bad_numbers_negative_and_zero_depth() {
    let depth = |value: &str| {
        error(&format!(
            "<dds><qos_library name=\"l\"><qos_profile name=\"p\">\n<topic_qos>\n<history>\n<depth>{value}</depth></history></topic_qos></qos_profile></qos_library></dds>"
        ))
    };
    for bad in ["ten", "-1", "0", "1.5", "0x10", "2147483648", ""] {
        assert_error(
            &depth(bad),
            4,
            &[
                &format!("bad value '{bad}' for <depth> in <history>"),
                "expected",
            ],
        );
    }
    assert_error(&depth("0"), 4, &["from 1 to 2147483647"]);

    let e = error("<dds><qos_library name=\"l\"><qos_profile name=\"p\"><topic_qos>\n<resource_limits>\n<max_samples>-1</max_samples></resource_limits></topic_qos></qos_profile></qos_library></dds>");
    assert_error(&e, 3, &["'-1' for <max_samples>", "LENGTH_UNLIMITED"]);

    let e = error("<dds><qos_library name=\"l\"><qos_profile name=\"p\"><topic_qos>\n<deadline><period>\n<sec>1</sec>\n<nanosec>1000000000</nanosec></period></deadline></topic_qos></qos_profile></qos_library></dds>");
    assert_error(
        &e,
        4,
        &["'1000000000' for <nanosec> in <period>", "999999999"],
    );

    let e = error("<dds><qos_library name=\"l\"><qos_profile name=\"p\"><topic_qos>\n<deadline>\n<period><sec>0</sec></period></deadline></topic_qos></qos_profile></qos_library></dds>");
    assert_error(&e, 3, &["for <period> in <deadline>", "greater than zero"]);

    let e = error("<dds><qos_library name=\"l\"><qos_profile name=\"p\"><datawriter_qos>\n<ownership_strength><value>strong</value></ownership_strength></datawriter_qos></qos_profile></qos_library></dds>");
    assert_error(&e, 2, &["'strong' for <value> in <ownership_strength>"]);
}

#[test]
fn depth_above_max_samples_per_instance_is_an_error() {
    let e = error(
        r#"<dds><qos_library name="l">
<qos_profile name="base">
  <topic_qos><resource_limits><max_samples_per_instance>8</max_samples_per_instance></resource_limits></topic_qos>
</qos_profile>
<qos_profile name="deep" base_name="base">
  <datawriter_qos>
    <history><kind>KEEP_LAST_HISTORY_QOS</kind><depth>16</depth></history>
  </datawriter_qos>
</qos_profile>
</qos_library></dds>"#,
    );
    assert_error(
        &e,
        7,
        &[
            "profile 'deep', <datawriter_qos>",
            "history depth 16 (line 7) exceeds resource_limits max_samples_per_instance 8 (line 3)",
        ],
    );
    assert!(matches!(e, QosError::Inconsistent { .. }));
}

#[test]
fn missing_base_names_what_exists() {
    let e = error("<dds><qos_library name=\"l\">\n<qos_profile name=\"a\"/>\n<qos_profile name=\"b\"\n  base_name=\"c\"/>\n</qos_library></dds>");
    assert_error(
        &e,
        4,
        &[
            "profile 'b' has base_name 'c'",
            "library 'l' has no profile 'c' (profiles: a, b)",
        ],
    );
    assert!(matches!(e, QosError::MissingBase { .. }));

    let e = error("<dds><qos_library name=\"l\">\n<qos_profile name=\"a\" base_name=\"other::a\"/>\n</qos_library></dds>");
    assert_error(
        &e,
        2,
        &[
            "base_name 'other::a'",
            "no QoS library 'other' (libraries: l)",
        ],
    );

    let e = error("<dds><qos_library name=\"l\">\n<qos_profile name=\"a\" base_name=\"l::\"/>\n</qos_library></dds>");
    assert_error(&e, 2, &["'l::' for attribute 'base_name'"]);
}

#[test]
fn inheritance_cycles_show_the_chain() {
    let path = fixture("cycle.xml");
    let e = match QosSet::load(&QosSpec::parse(&path.display().to_string())) {
        Ok(_) => panic!("loaded"),
        Err(e) => e,
    };
    // The base_name that closes the loop is b's, on line 6.
    assert!(
        e.to_string().starts_with(&format!(
            "{}:6: inheritance cycle through base_name: loop::a -> loop::b -> loop::a",
            path.display()
        )),
        "{e}"
    );
    assert!(matches!(e, QosError::InheritanceCycle { .. }));

    let e = error("<dds><qos_library name=\"l\">\n<qos_profile name=\"x\"/>\n<qos_profile name=\"self\" base_name=\"l::self\"/>\n</qos_library></dds>");
    assert_error(&e, 3, &["inheritance cycle", "l::self -> l::self"]);
}

#[test]
fn unknown_library_unknown_profile_and_ambiguous_library() {
    let two = "<dds>\n<qos_library name=\"one\"><qos_profile name=\"p\"/></qos_library>\n<qos_library name=\"two\"/></dds>";
    let e = match QosSet::from_str(two, LABEL, Some("three")) {
        Ok(_) => panic!("loaded"),
        Err(e) => e,
    };
    assert_error(&e, 1, &["no QoS library 'three'", "(libraries: one, two)"]);
    assert!(matches!(e, QosError::UnknownLibrary { .. }));

    assert_error(
        &error(two),
        1,
        &["several QoS libraries (one, two)", "qos/x.xml::LIBRARY"],
    );

    let set = QosSet::from_str(two, LABEL, Some("one")).unwrap_or_else(|e| panic!("{e}"));
    let e = match set.for_class(TopicClass::Clock) {
        Ok(_) => panic!("found"),
        Err(e) => e,
    };
    assert_error(
        &e,
        2,
        &["QoS library 'one' has no profile 'clock' (profiles: p)"],
    );
    assert!(matches!(e, QosError::UnknownProfile { .. }));

    assert_error(&error("<dds>\n</dds>"), 1, &["no <qos_library>"]);
}

#[test]
fn duplicates_are_errors() {
    let e = error("<dds><qos_library name=\"l\">\n<qos_profile name=\"p\"/>\n<qos_profile name=\"p\"/>\n</qos_library></dds>");
    assert_error(
        &e,
        3,
        &["duplicate profile 'p' in QoS library 'l' (first at line 2)"],
    );
    assert!(matches!(e, QosError::DuplicateProfile { .. }));

    let e = error("<dds>\n<qos_library name=\"l\"/>\n<qos_library name=\"l\"/>\n</dds>");
    assert_error(&e, 3, &["duplicate QoS library 'l'"]);

    let e = error("<dds><qos_library name=\"l\"><qos_profile name=\"p\"><topic_qos>\n<history><depth>2</depth></history>\n<history><depth>3</depth></history></topic_qos></qos_profile></qos_library></dds>");
    assert_error(
        &e,
        3,
        &["duplicate <history> in <topic_qos> (first at line 2)"],
    );

    let e = error("<dds><qos_library name=\"l\"><qos_profile name=\"p\">\n<datareader_qos topic_filter=\"a*\"/>\n<topic_filter name=\"a*\"><datareader_qos/></topic_filter></qos_profile></qos_library></dds>");
    assert_error(&e, 3, &["duplicate <datareader_qos topic_filter='a*'>"]);
}

#[test]
fn unsupported_policies_are_refused_by_name() {
    let e = error("<dds><qos_library name=\"l\"><qos_profile name=\"p\">\n<publisher_qos>\n<partition><name><element>x</element></name></partition></publisher_qos></qos_profile></qos_library></dds>");
    assert_error(
        &e,
        3,
        &["policy 'partition' in <publisher_qos> is not supported by convoy"],
    );
    assert!(matches!(e, QosError::UnsupportedPolicy { .. }));

    let e = error("<dds><qos_library name=\"l\"><qos_profile name=\"p\"><datawriter_qos>\n<durability_service/></datawriter_qos></qos_profile></qos_library></dds>");
    assert_error(
        &e,
        2,
        &["policy 'durability_service'", "not supported by convoy"],
    );

    // Empty participant/publisher/subscriber QoS are fine.
    let ok = "<dds><qos_library name=\"l\"><qos_profile name=\"p\"><participant_qos/><publisher_qos></publisher_qos><subscriber_qos/><domainparticipant_qos/></qos_profile></qos_library></dds>";
    assert!(QosSet::from_str(ok, LABEL, None).is_ok());

    let e = error("<dds><qos_library name=\"l\"><qos_profile name=\"p\">\n<topic_qos topic_filter=\"x\"/></qos_profile></qos_library></dds>");
    assert_error(
        &e,
        2,
        &["topic_filter on <topic_qos>", "not supported by convoy"],
    );

    let e = error("<dds><qos_library name=\"l\"><qos_profile name=\"p\">\n<datawriter_qos base_name=\"x\"/></qos_profile></qos_library></dds>");
    assert_error(
        &e,
        2,
        &[
            "attribute 'base_name' on <datawriter_qos>",
            "not supported by convoy",
        ],
    );
}

#[test]
fn misplaced_policies_say_where_they_belong() {
    let e = error("<dds><qos_library name=\"l\"><qos_profile name=\"p\"><datawriter_qos>\n<time_based_filter><minimum_separation><sec>1</sec></minimum_separation></time_based_filter></datawriter_qos></qos_profile></qos_library></dds>");
    assert_error(
        &e,
        2,
        &[
            "policy 'time_based_filter' is not allowed in <datawriter_qos>",
            "<datareader_qos>",
        ],
    );
    assert!(matches!(e, QosError::MisplacedPolicy { .. }));

    let e = error("<dds><qos_library name=\"l\"><qos_profile name=\"p\"><datareader_qos>\n<ownership_strength><value>1</value></ownership_strength></datareader_qos></qos_profile></qos_library></dds>");
    assert_error(
        &e,
        2,
        &["'ownership_strength' is not allowed in <datareader_qos>"],
    );

    let e = error("<dds><qos_library name=\"l\"><qos_profile name=\"p\"><topic_qos>\n<time_based_filter/></topic_qos></qos_profile></qos_library></dds>");
    assert_error(
        &e,
        2,
        &["'time_based_filter' is not allowed in <topic_qos>"],
    );

    let e = error("<dds><qos_library name=\"l\"><qos_profile name=\"p\"><datareader_qos>\n<lifespan><duration><sec>1</sec></duration></lifespan></datareader_qos></qos_profile></qos_library></dds>");
    assert_error(
        &e,
        2,
        &[
            "'lifespan' is not allowed in <datareader_qos>",
            "<topic_qos>, <datawriter_qos>",
        ],
    );

    let e = error("<dds><qos_library name=\"l\"><qos_profile name=\"p\"><subscriber_qos>\n<reliability/></subscriber_qos></qos_profile></qos_library></dds>");
    assert_error(&e, 2, &["'reliability' is not allowed in <subscriber_qos>"]);
}

/// A profile whose writers and readers could not match each other loads, as in other DDS
/// implementations (it may serve writers only), with a warning naming `file:line` and the
/// profile; using it for both ends of a topic is the error, naming `file:line`, the profile and
/// the topic.
#[test]
fn profiles_whose_sides_cannot_match_load_and_fail_where_both_ends_are_used() {
    let xml = r#"<dds><qos_library name="l">
<qos_profile name="state">
  <datawriter_qos><reliability><kind>BEST_EFFORT_RELIABILITY_QOS</kind></reliability></datawriter_qos>
  <datareader_qos><reliability><kind>RELIABLE_RELIABILITY_QOS</kind></reliability></datareader_qos>
</qos_profile>
<qos_profile name="clock"/>
</qos_library></dds>"#;
    let set = QosSet::from_str(xml, LABEL, None).unwrap_or_else(|e| panic!("refused: {e}"));
    let warnings: Vec<String> = set.warnings().iter().map(ToString::to_string).collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let warning = &warnings[0];
    for word in [
        &format!("{LABEL}:2: profile 'state': "),
        "would never match",
        "reliability (writer BEST_EFFORT, reader RELIABLE",
        "writers only",
    ] {
        assert!(warning.contains(word), "'{word}' missing from: {warning}");
    }
    // Its writers alone are fine, and so is a profile whose sides match.
    let state = set.profile("state").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        state.writer_for("convoy/agent/a/state").reliability,
        Reliability::BestEffort
    );
    assert!(set
        .check_both_ends(TopicClass::Clock, "convoy/clock")
        .is_ok());
    // Both ends of one topic: refused.
    let e = match set.check_both_ends(TopicClass::State, "convoy/agent/a/state") {
        Ok(()) => panic!("both ends of a topic accepted"),
        Err(e) => e,
    };
    assert_error(
        &e,
        2,
        &[
            "profile 'state'",
            "topic 'convoy/agent/a/state'",
            "would never match",
            "reliability (writer BEST_EFFORT, reader RELIABLE",
        ],
    );
    assert!(matches!(e, QosError::Incompatible { .. }));

    // A reader deadline alone (the writer's is infinite) cannot match either: only on the
    // topics of its topic_filter.
    let xml = r#"<dds><qos_library name="l">
<qos_profile name="state">
  <datareader_qos topic_filter="convoy/agent/a*/state"><deadline><period><sec>1</sec></period></deadline></datareader_qos>
</qos_profile>
</qos_library></dds>"#;
    let set = QosSet::from_str(xml, LABEL, None).unwrap_or_else(|e| panic!("refused: {e}"));
    let warnings: Vec<String> = set.warnings().iter().map(ToString::to_string).collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with(&format!(
            "{LABEL}:2: profile 'state' (topic_filter 'convoy/agent/a*/state'): "
        )) && warnings[0].contains("deadline"),
        "{}",
        warnings[0]
    );
    let e = match set.check_both_ends(TopicClass::State, "convoy/agent/ab/state") {
        Ok(()) => panic!("both ends of a filtered topic accepted"),
        Err(e) => e,
    };
    assert_error(&e, 2, &["topic 'convoy/agent/ab/state'", "deadline"]);
    assert!(set
        .check_both_ends(TopicClass::State, "convoy/agent/b/state")
        .is_ok());

    // A matching file has no warnings.
    assert!(QosSet::builtin().warnings().is_empty());
}

#[test]
fn malformed_xml_gives_its_position() {
    let e =
        error("<dds>\n<qos_library name=\"l\">\n<qos_profile name=\"p\">\n</qos_library>\n</dds>");
    assert_error(&e, 4, &["malformed XML"]);
    assert!(matches!(e, QosError::Xml { .. }));

    let e = error("<dds>\n<qos_library name=\"l\" name=\"m\"/>\n</dds>");
    assert_error(&e, 2, &["malformed XML"]);
}

#[test]
fn unreadable_file_is_named() {
    let path = fixture("does_not_exist.xml");
    let spec: QosSpec = match format!("{}::lib", path.display()).parse() {
        Ok(spec) => spec,
        Err(e) => panic!("{e}"),
    };
    let e = match QosSet::load(&spec) {
        Ok(_) => panic!("loaded"),
        Err(e) => e,
    };
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("{}: cannot read QoS file: ", path.display())),
        "{text}"
    );
    assert_eq!(e.line(), None);
    assert!(matches!(e, QosError::Io { .. }));
    // Said once: a node prints an error with its sources.
    assert!(std::error::Error::source(&e).is_none(), "{e}");

    // A directory is not a file either.
    let e = match QosSet::load(&QosSpec::parse(&fixture("").display().to_string())) {
        Ok(_) => panic!("loaded a directory"),
        Err(e) => e,
    };
    assert!(matches!(e, QosError::Io { .. }), "{e}");
}
