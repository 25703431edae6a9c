/*
 * cyclone_sink: the CycloneDDS reader of `convoy bench images --reader cyclone`.
 *
 * Reads convoy::Image or convoy::PointCloud (types generated from idl/convoy.idl by idlc, so
 * nothing is shared with the Rust side) and checks every byte of every sample against the
 * bench's pattern: byte i of sample seq is (31 seq + 7 i) mod 256.
 *
 * Usage: cyclone_sink DOMAIN TOPIC image|cloud reliable|best-effort DEPTH COUNT BYTES
 *
 * stdout, one line each (the sink protocol of nodes/cli/src/bench/images.rs):
 *   READY                               the first warm-up sample (seq 2^64-1) arrived
 *   RECV <seq> <latency_us> <whole>     per sample; latency against CLOCK_REALTIME
 *   DONE                                after COUNT samples, or 3 s after stdin closes
 * Exit status: 0, or 2 on bad arguments or a DDS error.
 */

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dds/dds.h"
#include "convoy.h"

#define WARMUP_SEQ UINT64_MAX
#define GRACE_NS 3000000000LL
#define TAKE_BATCH 8

static int64_t now_ns (clockid_t clock)
{
  struct timespec ts;
  clock_gettime (clock, &ts);
  return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The sample bytes seq must carry. */
static bool whole (uint64_t seq, const uint8_t *data, uint32_t len, uint32_t want_len)
{
  if (len != want_len)
    return false;
  uint32_t base = (uint32_t) ((seq * 31u) & 0xffu);
  for (uint32_t i = 0; i < len; i++)
    if (data[i] != (uint8_t) ((base + 7u * i) & 0xffu))
      return false;
  return true;
}

/* True once stdin has closed (the writer is done). */
static bool stdin_closed (void)
{
  struct pollfd p = { .fd = 0, .events = POLLIN };
  if (poll (&p, 1, 0) <= 0)
    return false;
  char buf[256];
  ssize_t n = read (0, buf, sizeof buf);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
}

int main (int argc, char **argv)
{
  if (argc != 8)
  {
    fprintf (stderr, "usage: %s DOMAIN TOPIC image|cloud reliable|best-effort DEPTH COUNT BYTES\n", argv[0]);
    return 2;
  }
  dds_domainid_t domain = (dds_domainid_t) strtoul (argv[1], NULL, 10);
  const char *topic_name = argv[2];
  bool image = strcmp (argv[3], "image") == 0;
  bool reliable = strcmp (argv[4], "reliable") == 0;
  int32_t depth = (int32_t) strtol (argv[5], NULL, 10);
  uint64_t count = strtoull (argv[6], NULL, 10);
  uint32_t bytes = (uint32_t) strtoul (argv[7], NULL, 10);
  if ((!image && strcmp (argv[3], "cloud") != 0) || depth <= 0)
  {
    fprintf (stderr, "cyclone_sink: bad arguments\n");
    return 2;
  }

  dds_entity_t participant = dds_create_participant (domain, NULL, NULL);
  if (participant < 0)
  {
    fprintf (stderr, "cyclone_sink: dds_create_participant: %s\n", dds_strretcode (-participant));
    return 2;
  }
  const dds_topic_descriptor_t *desc = image ? &convoy_Image_desc : &convoy_PointCloud_desc;
  dds_entity_t topic = dds_create_topic (participant, desc, topic_name, NULL, NULL);
  dds_qos_t *qos = dds_create_qos ();
  dds_qset_reliability (qos, reliable ? DDS_RELIABILITY_RELIABLE : DDS_RELIABILITY_BEST_EFFORT, DDS_SECS (1));
  dds_qset_durability (qos, DDS_DURABILITY_VOLATILE);
  dds_qset_history (qos, DDS_HISTORY_KEEP_LAST, depth);
  dds_data_representation_id_t xcdr1 = DDS_DATA_REPRESENTATION_XCDR1;
  dds_qset_data_representation (qos, 1, &xcdr1);
  dds_entity_t reader = dds_create_reader (participant, topic, qos, NULL);
  dds_delete_qos (qos);
  if (topic < 0 || reader < 0)
  {
    fprintf (stderr, "cyclone_sink: cannot create the reader on %s\n", topic_name);
    dds_delete (participant);
    return 2;
  }
  dds_entity_t waitset = dds_create_waitset (participant);
  dds_entity_t readcond = dds_create_readcondition (reader, DDS_ANY_STATE);
  dds_waitset_attach (waitset, readcond, reader);

  bool ready = false;
  uint64_t received = 0;
  int64_t done_at = 0;
  while (received < count)
  {
    if (done_at == 0 && stdin_closed ())
      done_at = now_ns (CLOCK_MONOTONIC);
    if (done_at != 0 && now_ns (CLOCK_MONOTONIC) - done_at > GRACE_NS)
      break;
    dds_waitset_wait (waitset, NULL, 0, DDS_MSECS (50));
    void *samples[TAKE_BATCH] = { NULL };
    dds_sample_info_t infos[TAKE_BATCH];
    int n = dds_take (reader, samples, infos, TAKE_BATCH, TAKE_BATCH);
    if (n < 0)
    {
      fprintf (stderr, "cyclone_sink: dds_take: %s\n", dds_strretcode (-n));
      break;
    }
    int64_t at = now_ns (CLOCK_REALTIME);
    for (int i = 0; i < n; i++)
    {
      if (!infos[i].valid_data)
        continue;
      const convoy_SensorHeader *h;
      const uint8_t *data;
      uint32_t len;
      if (image)
      {
        const convoy_Image *s = samples[i];
        h = &s->header; data = s->data._buffer; len = s->data._length;
      }
      else
      {
        const convoy_PointCloud *s = samples[i];
        h = &s->header; data = s->data._buffer; len = s->data._length;
      }
      if (h->seq == WARMUP_SEQ)
      {
        if (!ready)
          printf ("READY\n");
        ready = true;
        continue;
      }
      printf ("RECV %" PRIu64 " %.1f %d\n", h->seq, (double) (at - h->stamp_ns) / 1000.0,
              whole (h->seq, data, len, bytes) ? 1 : 0);
      received++;
    }
    if (n > 0)
      dds_return_loan (reader, samples, n);
    fflush (stdout);
  }
  printf ("DONE\n");
  fflush (stdout);
  dds_delete (participant);
  return 0;
}
