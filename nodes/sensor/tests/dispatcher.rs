//! Dispatcher behaviour: every drop reason, on_done always once, clean shutdown. Jobs are held
//! running with channels, never with sleeps; every wait is bounded.

use convoy_sensor::{Dispatcher, DropCounts, PublisherId};
use std::sync::mpsc::{channel, Sender};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

/// on_done that reports its result on a channel.
fn done_to(tx: &Sender<bool>) -> Box<dyn FnOnce(bool) + Send> {
    let tx = tx.clone();
    Box::new(move |ok| {
        let _ = tx.send(ok);
    })
}

/// Queues a job of `publisher` that holds a worker until released (the returned sender),
/// then succeeds and reports to `done`; returns once the job runs.
fn hold(d: &Dispatcher, publisher: PublisherId, done: &Sender<bool>) -> Sender<()> {
    let (started_tx, started_rx) = channel();
    let (release_tx, release_rx) = channel::<()>();
    let job = Box::new(move || {
        let _ = started_tx.send(());
        release_rx.recv_timeout(WAIT).is_ok()
    });
    assert!(d.try_queue(publisher, job, done_to(done)));
    started_rx.recv_timeout(WAIT).unwrap();
    release_tx
}

/// Queues a job of `publisher` and checks that it is published.
fn assert_published(d: &Dispatcher, publisher: PublisherId) {
    let (tx, rx) = channel();
    assert!(d.try_queue(publisher, Box::new(|| true), done_to(&tx)));
    assert_eq!(rx.recv_timeout(WAIT), Ok(true));
}

/// Queues a job of `publisher` and checks that it is dropped at once, on_done(false) already
/// run.
fn assert_dropped(d: &Dispatcher, publisher: PublisherId) {
    let (tx, rx) = channel();
    assert!(!d.try_queue(publisher, Box::new(|| true), done_to(&tx)));
    assert_eq!(rx.try_recv(), Ok(false));
}

#[test]
fn publishes_and_reports_success() {
    let d = Dispatcher::new(2, 8).unwrap();
    assert_published(&d, d.register_publisher());
    // Counters are updated before on_done runs.
    assert_eq!(
        d.counts(),
        DropCounts {
            published: 1,
            ..Default::default()
        }
    );
}

#[test]
fn zero_workers_means_available_cores() {
    let d = Dispatcher::new(0, 1).unwrap();
    assert!(d.worker_count() >= 1);
}

#[test]
fn busy_token_drops_next_message_of_same_publisher_only() {
    let d = Dispatcher::new(2, 8).unwrap();
    let a = d.register_publisher();
    let b = d.register_publisher();
    let (done_tx, done_rx) = channel();
    let release = hold(&d, a, &done_tx);

    // Same publisher while its job runs: dropped at once.
    assert_dropped(&d, a);
    assert_eq!(d.counts().token_busy, 1);
    // Another publisher is not affected.
    assert_published(&d, b);

    release.send(()).unwrap();
    assert_eq!(done_rx.recv_timeout(WAIT), Ok(true));
    // Token free again.
    assert_published(&d, a);
    let c = d.counts();
    assert_eq!((c.published, c.token_busy), (3, 1));
}

#[test]
fn token_is_busy_while_queued_too() {
    // One worker held by publisher a; b's job waits in the queue, so b's token is taken.
    let d = Dispatcher::new(1, 8).unwrap();
    let a = d.register_publisher();
    let b = d.register_publisher();
    let (done_tx, done_rx) = channel();
    let release = hold(&d, a, &done_tx);
    assert!(d.try_queue(b, Box::new(|| true), done_to(&done_tx)));
    assert_dropped(&d, b);
    assert_eq!(d.counts().token_busy, 1);
    release.send(()).unwrap();
    assert_eq!(done_rx.recv_timeout(WAIT), Ok(true));
    assert_eq!(done_rx.recv_timeout(WAIT), Ok(true));
}

#[test]
fn full_queue_drops() {
    let d = Dispatcher::new(1, 1).unwrap();
    let a = d.register_publisher();
    let b = d.register_publisher();
    let c = d.register_publisher();
    let (done_tx, done_rx) = channel();
    // a's job is off the queue and running on the only worker.
    let release = hold(&d, a, &done_tx);
    assert!(d.try_queue(b, Box::new(|| true), done_to(&done_tx)));
    assert_eq!(d.queued(), 1);
    assert_dropped(&d, c);
    assert_eq!(d.counts().queue_full, 1);
    release.send(()).unwrap();
    assert_eq!(done_rx.recv_timeout(WAIT), Ok(true));
    assert_eq!(done_rx.recv_timeout(WAIT), Ok(true));
    // The dropped job's token was never taken.
    assert_published(&d, c);
}

#[test]
fn paused_drops_until_resumed() {
    let d = Dispatcher::new(1, 4).unwrap();
    let p = d.register_publisher();
    d.set_paused(true);
    assert!(d.is_paused());
    assert_dropped(&d, p);
    assert_eq!(d.counts().paused, 1);
    d.set_paused(false);
    assert_published(&d, p);
}

#[test]
fn failing_or_panicking_job_is_publisher_error() {
    let d = Dispatcher::new(1, 4).unwrap();
    let p = d.register_publisher();
    let (tx, rx) = channel();
    assert!(d.try_queue(p, Box::new(|| false), done_to(&tx)));
    assert_eq!(rx.recv_timeout(WAIT), Ok(false));
    assert!(d.try_queue(p, Box::new(|| panic!("publisher blew up")), done_to(&tx)));
    assert_eq!(rx.recv_timeout(WAIT), Ok(false));
    // The worker survived and the token was released.
    assert_published(&d, p);
    let c = d.counts();
    assert_eq!((c.publisher_error, c.published), (2, 1));
}

#[test]
fn on_done_may_queue_the_next_message() {
    let d = std::sync::Arc::new(Dispatcher::new(1, 4).unwrap());
    let p = d.register_publisher();
    let (tx, rx) = channel();
    let d2 = std::sync::Arc::clone(&d);
    let tx2 = tx.clone();
    let chained: Box<dyn FnOnce(bool) + Send> = Box::new(move |ok| {
        assert!(ok);
        let queued = d2.try_queue(p, Box::new(|| true), done_to(&tx2));
        let _ = tx2.send(queued);
    });
    assert!(d.try_queue(p, Box::new(|| true), chained));
    assert_eq!(rx.recv_timeout(WAIT), Ok(true)); // re-queued
    assert_eq!(rx.recv_timeout(WAIT), Ok(true)); // and published
}

#[test]
fn drop_runs_queued_jobs_and_joins() {
    let (tx, rx) = channel();
    {
        let d = Dispatcher::new(1, 16).unwrap();
        let release = hold(&d, d.register_publisher(), &tx);
        for _ in 0..5 {
            let p = d.register_publisher();
            assert!(d.try_queue(p, Box::new(|| true), done_to(&tx)));
        }
        release.send(()).unwrap();
    }
    // After drop returned every on_done has run.
    let results: Vec<bool> = rx.try_iter().collect();
    assert_eq!(results, vec![true; 6]);
}

#[test]
fn on_done_runs_exactly_once_under_load() {
    let d = Dispatcher::new(4, 4).unwrap();
    let pubs: Vec<_> = (0..8).map(|_| d.register_publisher()).collect();
    let (tx, rx) = channel();
    let mut accepted = 0;
    for i in 0..1000 {
        let ok = d.try_queue(pubs[i % 8], Box::new(move || i % 7 != 0), done_to(&tx));
        accepted += usize::from(ok);
    }
    drop(d);
    let results: Vec<bool> = rx.try_iter().collect();
    assert_eq!(results.len(), 1000);
    assert!(accepted > 0);
}
