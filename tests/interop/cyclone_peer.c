/*
 * cyclone_peer: an independent CycloneDDS implementation of convoy's wire contract.
 *
 * The types come from idl/convoy.idl through Eclipse Cyclone DDS's own `idlc`, so this program
 * shares no code with nodes/core/src/messages.rs. The Rust interop test publishes canonical
 * samples on `interop/to_cyclone/<Type>` and reads ours from `interop/from_cyclone/<Type>`; if
 * both sides agree on every field, the Rust CDR encoding matches the IDL.
 *
 * Usage: cyclone_peer DOMAIN_ID TIMEOUT_SECONDS [TO_PREFIX FROM_PREFIX]
 *
 * The prefixes replace `interop/to_cyclone/` and `interop/from_cyclone/`. CYCLONEDDS_URI may
 * secure the participant (DDS Security with Debian's plugins): the secured interop test.
 *
 *        cyclone_peer DOMAIN_ID TIMEOUT_SECONDS write TYPE=TOPIC [TYPE=TOPIC ...]
 *
 * Only writes: the canonical sample of each TYPE on its TOPIC every period (reliable,
 * transient-local, KEEP_LAST 8), printing `WRITER <topic>` once its writer exists and
 * `MATCHED <topic> <n>` when the number of matched readers changes, until the timeout or a
 * signal; exit status 0, or 1 when a writer cannot be made. The secured tests use it as a
 * participant whose own access checks are off (its governance), to see what convoy's readers
 * accept from it.
 *
 * stdout (one line each, flushed at once; the Rust test parses it):
 *   OK <Type>                                      first fully matching sample of <Type>
 *   MISMATCH <Type>: <path> got <x> want <y>       once per distinct field path
 *   ALL OK                                         every type has matched once
 *   TIMEOUT missing: <Type> <Type> ...             the timeout passed before ALL OK
 * Diagnostics (matching, incompatible QoS, DDS errors) go to stderr.
 *
 * Exit status: 0 after ALL OK, 1 if some type never matched, 3 if any mismatch was seen; on
 * SIGTERM/SIGINT the same rule applies to what was seen so far.
 */

#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dds/dds.h"
#include "convoy.h"

/* The topic prefixes; a secured run's governance covers only convoy's topics, so the secured
   test passes its own (convoy/bench/to_cyclone/, convoy/bench/from_cyclone/). */
static const char *to_cyclone_prefix = "interop/to_cyclone/";
static const char *from_cyclone_prefix = "interop/from_cyclone/";
#define PERIOD DDS_MSECS(100)
#define HISTORY_DEPTH 8
#define TAKE_BATCH 16
#define PATH_LEN 160
#define VALUE_LEN 96
/* A badly broken encoding could differ in every element of a sequence; remembering (and
   printing) a bounded number of paths per type keeps the output readable. */
#define MAX_REPORTED_PATHS 64

/* ==== canonical samples ====================================================================
 *
 * The Rust side builds the very same values independently. The samples live in static storage
 * for the whole run: dds_write only reads them, so string literals and static sequence buffers
 * (with _release = false) are fine and nothing needs freeing.
 */

#define SET_SEQ(seq, buf, n) \
  do { \
    (seq)._maximum = (uint32_t)(n); \
    (seq)._length = (uint32_t)(n); \
    (seq)._buffer = (buf); \
    (seq)._release = false; \
  } while (0)

#define COUNT_OF(a) (sizeof (a) / sizeof ((a)[0]))

/* idlc maps IDL strings to `char *`; the canonical samples never modify theirs. */
static char *lit (const char *s)
{
  return (char *) s;
}

static void set_vec3 (convoy_Vec3 *v, double x, double y, double z)
{
  v->x = x;
  v->y = y;
  v->z = z;
}

static void set_header (convoy_SensorHeader *h, const char *sensor, uint64_t seq)
{
  h->agent = lit ("ego");
  h->sensor = lit (sensor);
  h->frame = 43;
  h->stamp_ns = 430000000;
  h->seq = seq;
}

/* state(id, frame, x) of the contract: only the id, frame and position.x vary. */
static void build_state (convoy_AgentState *s, const char *id, uint64_t frame, double x)
{
  memset (s, 0, sizeof (*s));
  s->agent_id = lit (id);
  s->frame = frame;
  s->stamp_ns = (int64_t) frame * 10000000;
  set_vec3 (&s->pose.position, x, -2.25, 0.125);
  s->pose.orientation.x = 0.0;
  s->pose.orientation.y = 0.0;
  s->pose.orientation.z = 0.38268343236508984;
  s->pose.orientation.w = 0.9238795325112867;
  set_vec3 (&s->twist.linear, 3.0, 0.5, -0.0625);
  set_vec3 (&s->twist.angular, 0.01, -0.02, 0.3);
  set_vec3 (&s->accel, 0.25, -9.81, 1e-9);
  set_vec3 (&s->extents, 2.25, 1.0, 0.75);
}

static void build_agent_state (convoy_AgentState *s)
{
  build_state (s, "ego", 42, 1.5);
}

static void build_tick (convoy_Tick *t)
{
  static char *agents[2];
  static convoy_AgentState states[2];
  agents[0] = lit ("car_2");
  agents[1] = lit ("ego");
  build_state (&states[0], "car_2", 42, 11.5);
  build_state (&states[1], "ego", 42, 1.5);

  memset (t, 0, sizeof (*t));
  t->frame = 43;
  t->sim_time_ns = 430000000;
  t->dt_ns = 10000000;
  t->paused = true;
  SET_SEQ (t->agents, agents, COUNT_OF (agents));
  SET_SEQ (t->states, states, COUNT_OF (states));
}

static void build_frame_done (convoy_FrameDone *f)
{
  memset (f, 0, sizeof (*f));
  f->node_id = lit ("agent/ego");
  f->frame = 43;
}

static void build_node_status (convoy_NodeStatus *n)
{
  static convoy_Counter counters[2];
  counters[0].name = lit ("dropped_token_busy");
  counters[0].value = 3;
  counters[1].name = lit ("published");
  counters[1].value = UINT64_MAX; /* 18446744073709551615: the full unsigned range */

  memset (n, 0, sizeof (*n));
  n->node_id = lit ("sensor-main");
  n->role = convoy_ROLE_SENSOR_MAIN;
  n->host = lit ("host-a");
  n->capacity = 1.5;
  n->load = 0.65;
  SET_SEQ (n->counters, counters, COUNT_OF (counters));
}

static void build_sensor_assignment (convoy_SensorAssignment *a)
{
  memset (a, 0, sizeof (*a));
  a->agent_id = lit ("ego");
  a->sensor_id = lit ("front_cam");
  a->node_id = lit ("sensor-client-1");
  a->epoch = UINT32_MAX; /* 4294967295 */
  a->load = 0.35;
}

static void build_image (convoy_Image *img)
{
  static uint8_t data[64 * 48 * 3];
  for (uint32_t i = 0; i < COUNT_OF (data); i++)
    data[i] = (uint8_t) ((i * 7 + 3) % 256);

  memset (img, 0, sizeof (*img));
  set_header (&img->header, "front_cam", 7);
  img->width = 64;
  img->height = 48;
  img->encoding = lit ("rgb8");
  img->step = 192;
  SET_SEQ (img->data, data, COUNT_OF (data));
}

static void build_point_cloud (convoy_PointCloud *pc)
{
  static convoy_PointField fields[6];
  static uint8_t data[1000 * 16];
  static const struct { const char *name; uint32_t offset; convoy_PointFieldType type; } layout[6] = {
    { "x", 0, convoy_FIELD_FLOAT32 },
    { "y", 4, convoy_FIELD_FLOAT32 },
    { "z", 8, convoy_FIELD_FLOAT32 },
    { "intensity", 12, convoy_FIELD_UINT8 },
    { "return_type", 13, convoy_FIELD_UINT8 },
    { "channel", 14, convoy_FIELD_UINT16 },
  };
  for (size_t i = 0; i < COUNT_OF (fields); i++)
  {
    fields[i].name = lit (layout[i].name);
    fields[i].offset = layout[i].offset;
    fields[i].datatype = layout[i].type;
  }
  /* 251 is prime, so the pattern does not repeat with the 16-byte point stride. */
  for (uint32_t i = 0; i < COUNT_OF (data); i++)
    data[i] = (uint8_t) ((i * 13 + 1) % 251);

  memset (pc, 0, sizeof (*pc));
  set_header (&pc->header, "top_lidar", 8);
  pc->point_count = 1000;
  pc->point_step = 16;
  SET_SEQ (pc->fields, fields, COUNT_OF (fields));
  SET_SEQ (pc->data, data, COUNT_OF (data));
}

static void build_gnss_fix (convoy_GnssFix *g)
{
  memset (g, 0, sizeof (*g));
  set_header (&g->header, "gnss", 9);
  g->latitude = 48.137154;
  g->longitude = 11.576124;
  g->altitude = 519.25;
  for (int i = 0; i < 9; i++)
    g->position_covariance[i] = (i + 1) * 0.5;
}

static void build_world_request (convoy_WorldRequest *r)
{
  memset (r, 0, sizeof (*r));
  r->request_id = lit ("cli-1-7");
  r->client = lit ("cli-1");
  r->command.kind = convoy_WORLD_TELEPORT;
  r->command.agent_id = lit ("ego");
  set_vec3 (&r->command.pose.position, 10.0, 0.0, 0.5);
  r->command.pose.orientation.x = 0.0;
  r->command.pose.orientation.y = 0.0;
  r->command.pose.orientation.z = 0.0;
  r->command.pose.orientation.w = 1.0;
  r->command.control.frame = 0;
  r->command.control.mode = convoy_CONTROL_VELOCITY;
  r->command.control.throttle = 0.5;
  r->command.control.brake = 0.0;
  r->command.control.steer = -0.25;
  r->command.control.linear_velocity = 5.5;
  r->command.control.angular_velocity = -0.125;
}

static struct
{
  convoy_Tick tick;
  convoy_AgentState agent_state;
  convoy_FrameDone frame_done;
  convoy_NodeStatus node_status;
  convoy_SensorAssignment sensor_assignment;
  convoy_Image image;
  convoy_PointCloud point_cloud;
  convoy_GnssFix gnss_fix;
  convoy_WorldRequest world_request;
} canon;

static void build_canonical_samples (void)
{
  build_tick (&canon.tick);
  build_agent_state (&canon.agent_state);
  build_frame_done (&canon.frame_done);
  build_node_status (&canon.node_status);
  build_sensor_assignment (&canon.sensor_assignment);
  build_image (&canon.image);
  build_point_cloud (&canon.point_cloud);
  build_gnss_fix (&canon.gnss_fix);
  build_world_request (&canon.world_request);
}

/* ==== comparison ===========================================================================
 *
 * Every comparison walks the received sample alongside the canonical one, building the field
 * path as it descends ("states[1].pose.position.x"), and reports each difference.
 */

struct peer_type;

struct cmp
{
  struct peer_type *type; /* where mismatches are recorded and reported */
  bool equal;             /* cleared by the first difference in this sample */
};

typedef void (*compare_fn) (struct cmp *c, const void *got, const void *want);

struct peer_type
{
  const char *name;
  const dds_topic_descriptor_t *desc;
  const void *canonical;
  compare_fn compare;
  dds_entity_t reader, writer;
  bool ok;                /* a fully matching sample has been seen */
  bool write_failed;      /* a write error has been reported (once) */
  size_t n_reported;
  char *reported[MAX_REPORTED_PATHS];
};

static bool any_mismatch;

/* Prints "MISMATCH" once per (type, path): the peer sees the same faulty sample ten times a
   second and the log should say what is wrong, not how often. */
static void report (struct cmp *c, const char *path, const char *got, const char *want)
{
  struct peer_type *t = c->type;
  c->equal = false;
  any_mismatch = true;
  for (size_t i = 0; i < t->n_reported; i++)
    if (strcmp (t->reported[i], path) == 0)
      return;
  if (t->n_reported == MAX_REPORTED_PATHS)
    return;
  t->reported[t->n_reported++] = strdup (path);
  printf ("MISMATCH %s: %s got %s want %s\n", t->name, path, got, want);
}

static void child_path (char *buf, const char *parent, const char *field)
{
  if (parent[0] == '\0')
    snprintf (buf, PATH_LEN, "%s", field);
  else
    snprintf (buf, PATH_LEN, "%s.%s", parent, field);
}

static void index_path (char *buf, const char *parent, uint32_t index)
{
  snprintf (buf, PATH_LEN, "%s[%" PRIu32 "]", parent, index);
}

/* Shortest decimal that reads back as the same double, so 0.65 prints as "0.65" rather than
   "0.65000000000000002", yet two different doubles never print alike. */
static void format_f64 (char *buf, double v)
{
  for (int precision = 15; precision <= 17; precision++)
  {
    snprintf (buf, VALUE_LEN, "%.*g", precision, v);
    if (strtod (buf, NULL) == v)
      return;
  }
}

/* Quotes a string and escapes anything unprintable, so one MISMATCH stays one line. */
static void format_str (char *buf, const char *s)
{
  if (s == NULL)
  {
    snprintf (buf, VALUE_LEN, "null");
    return;
  }
  size_t n = 0;
  buf[n++] = '"';
  for (; *s != '\0' && n < VALUE_LEN - 8; s++)
  {
    unsigned char ch = (unsigned char) *s;
    if (ch == '"' || ch == '\\')
      n += (size_t) snprintf (buf + n, VALUE_LEN - n, "\\%c", ch);
    else if (ch < 0x20 || ch >= 0x7f)
      n += (size_t) snprintf (buf + n, VALUE_LEN - n, "\\x%02x", ch);
    else
      buf[n++] = (char) ch;
  }
  if (*s != '\0')
    n += (size_t) snprintf (buf + n, VALUE_LEN - n, "...");
  snprintf (buf + n, VALUE_LEN - n, "\"");
}

/* Doubles are compared with ==: both sides build them from the same decimal literals, and
   CDR carries the IEEE-754 bits unchanged. */
static void cmp_f64 (struct cmp *c, const char *path, double got, double want)
{
  if (got == want)
    return;
  char g[VALUE_LEN], w[VALUE_LEN];
  format_f64 (g, got);
  format_f64 (w, want);
  report (c, path, g, w);
}

static void cmp_u64 (struct cmp *c, const char *path, uint64_t got, uint64_t want)
{
  if (got == want)
    return;
  char g[VALUE_LEN], w[VALUE_LEN];
  snprintf (g, sizeof (g), "%" PRIu64, got);
  snprintf (w, sizeof (w), "%" PRIu64, want);
  report (c, path, g, w);
}

static void cmp_i64 (struct cmp *c, const char *path, int64_t got, int64_t want)
{
  if (got == want)
    return;
  char g[VALUE_LEN], w[VALUE_LEN];
  snprintf (g, sizeof (g), "%" PRId64, got);
  snprintf (w, sizeof (w), "%" PRId64, want);
  report (c, path, g, w);
}

/* Enums are C enums in idlc's output and 32-bit unsigned on the wire; compare the numbers. */
static void cmp_enum (struct cmp *c, const char *path, int got, int want)
{
  cmp_i64 (c, path, got, want);
}

static void cmp_bool (struct cmp *c, const char *path, bool got, bool want)
{
  if (got != want)
    report (c, path, got ? "true" : "false", want ? "true" : "false");
}

static void cmp_str (struct cmp *c, const char *path, const char *got, const char *want)
{
  if (got != NULL && strcmp (got, want) == 0)
    return;
  char g[VALUE_LEN], w[VALUE_LEN];
  format_str (g, got);
  format_str (w, want);
  report (c, path, g, w);
}

/* Compares sequence lengths (reported as "<path>.length") and returns how many leading
   elements both sides have, so the caller can still compare those. */
static uint32_t cmp_seq_len (struct cmp *c, const char *path, uint32_t got, uint32_t want)
{
  char p[PATH_LEN];
  child_path (p, path, "length");
  cmp_u64 (c, p, got, want);
  return got < want ? got : want;
}

/* Octet sequences report only their first differing byte: a shifted payload would otherwise
   produce thousands of lines. */
static void cmp_octets (struct cmp *c, const char *path, const dds_sequence_octet *got,
                        const dds_sequence_octet *want)
{
  uint32_t n = cmp_seq_len (c, path, got->_length, want->_length);
  for (uint32_t i = 0; i < n; i++)
  {
    if (got->_buffer[i] != want->_buffer[i])
    {
      char p[PATH_LEN];
      index_path (p, path, i);
      cmp_u64 (c, p, got->_buffer[i], want->_buffer[i]);
      return;
    }
  }
}

/* ---- nested structs ---------------------------------------------------------------------- */

static void cmp_vec3 (struct cmp *c, const char *path, const convoy_Vec3 *got, const convoy_Vec3 *want)
{
  char p[PATH_LEN];
  child_path (p, path, "x"); cmp_f64 (c, p, got->x, want->x);
  child_path (p, path, "y"); cmp_f64 (c, p, got->y, want->y);
  child_path (p, path, "z"); cmp_f64 (c, p, got->z, want->z);
}

static void cmp_quat (struct cmp *c, const char *path, const convoy_Quat *got, const convoy_Quat *want)
{
  char p[PATH_LEN];
  child_path (p, path, "x"); cmp_f64 (c, p, got->x, want->x);
  child_path (p, path, "y"); cmp_f64 (c, p, got->y, want->y);
  child_path (p, path, "z"); cmp_f64 (c, p, got->z, want->z);
  child_path (p, path, "w"); cmp_f64 (c, p, got->w, want->w);
}

static void cmp_pose (struct cmp *c, const char *path, const convoy_Pose *got, const convoy_Pose *want)
{
  char p[PATH_LEN];
  child_path (p, path, "position"); cmp_vec3 (c, p, &got->position, &want->position);
  child_path (p, path, "orientation"); cmp_quat (c, p, &got->orientation, &want->orientation);
}

static void cmp_twist (struct cmp *c, const char *path, const convoy_Twist *got, const convoy_Twist *want)
{
  char p[PATH_LEN];
  child_path (p, path, "linear"); cmp_vec3 (c, p, &got->linear, &want->linear);
  child_path (p, path, "angular"); cmp_vec3 (c, p, &got->angular, &want->angular);
}

static void cmp_state (struct cmp *c, const char *path, const convoy_AgentState *got,
                       const convoy_AgentState *want)
{
  char p[PATH_LEN];
  child_path (p, path, "agent_id"); cmp_str (c, p, got->agent_id, want->agent_id);
  child_path (p, path, "frame"); cmp_u64 (c, p, got->frame, want->frame);
  child_path (p, path, "stamp_ns"); cmp_i64 (c, p, got->stamp_ns, want->stamp_ns);
  child_path (p, path, "pose"); cmp_pose (c, p, &got->pose, &want->pose);
  child_path (p, path, "twist"); cmp_twist (c, p, &got->twist, &want->twist);
  child_path (p, path, "accel"); cmp_vec3 (c, p, &got->accel, &want->accel);
  child_path (p, path, "extents"); cmp_vec3 (c, p, &got->extents, &want->extents);
}

static void cmp_header (struct cmp *c, const char *path, const convoy_SensorHeader *got,
                        const convoy_SensorHeader *want)
{
  char p[PATH_LEN];
  child_path (p, path, "agent"); cmp_str (c, p, got->agent, want->agent);
  child_path (p, path, "sensor"); cmp_str (c, p, got->sensor, want->sensor);
  child_path (p, path, "frame"); cmp_u64 (c, p, got->frame, want->frame);
  child_path (p, path, "stamp_ns"); cmp_i64 (c, p, got->stamp_ns, want->stamp_ns);
  child_path (p, path, "seq"); cmp_u64 (c, p, got->seq, want->seq);
}

static void cmp_control (struct cmp *c, const char *path, const convoy_Control *got,
                         const convoy_Control *want)
{
  char p[PATH_LEN];
  child_path (p, path, "frame"); cmp_u64 (c, p, got->frame, want->frame);
  child_path (p, path, "mode"); cmp_enum (c, p, got->mode, want->mode);
  child_path (p, path, "throttle"); cmp_f64 (c, p, got->throttle, want->throttle);
  child_path (p, path, "brake"); cmp_f64 (c, p, got->brake, want->brake);
  child_path (p, path, "steer"); cmp_f64 (c, p, got->steer, want->steer);
  child_path (p, path, "linear_velocity"); cmp_f64 (c, p, got->linear_velocity, want->linear_velocity);
  child_path (p, path, "angular_velocity"); cmp_f64 (c, p, got->angular_velocity, want->angular_velocity);
}

static void cmp_world_command (struct cmp *c, const char *path, const convoy_WorldCommand *got,
                               const convoy_WorldCommand *want)
{
  char p[PATH_LEN];
  child_path (p, path, "kind"); cmp_enum (c, p, got->kind, want->kind);
  child_path (p, path, "agent_id"); cmp_str (c, p, got->agent_id, want->agent_id);
  child_path (p, path, "pose"); cmp_pose (c, p, &got->pose, &want->pose);
  child_path (p, path, "control"); cmp_control (c, p, &got->control, &want->control);
}

/* ---- top-level types (signature of compare_fn) -------------------------------------------- */

static void compare_agent_state (struct cmp *c, const void *got, const void *want)
{
  cmp_state (c, "", got, want);
}

static void compare_tick (struct cmp *c, const void *vgot, const void *vwant)
{
  const convoy_Tick *got = vgot, *want = vwant;
  char p[PATH_LEN];
  cmp_u64 (c, "frame", got->frame, want->frame);
  cmp_i64 (c, "sim_time_ns", got->sim_time_ns, want->sim_time_ns);
  cmp_i64 (c, "dt_ns", got->dt_ns, want->dt_ns);
  cmp_bool (c, "paused", got->paused, want->paused);
  uint32_t n = cmp_seq_len (c, "agents", got->agents._length, want->agents._length);
  for (uint32_t i = 0; i < n; i++)
  {
    index_path (p, "agents", i);
    cmp_str (c, p, got->agents._buffer[i], want->agents._buffer[i]);
  }
  n = cmp_seq_len (c, "states", got->states._length, want->states._length);
  for (uint32_t i = 0; i < n; i++)
  {
    index_path (p, "states", i);
    cmp_state (c, p, &got->states._buffer[i], &want->states._buffer[i]);
  }
}

static void compare_frame_done (struct cmp *c, const void *vgot, const void *vwant)
{
  const convoy_FrameDone *got = vgot, *want = vwant;
  cmp_str (c, "node_id", got->node_id, want->node_id);
  cmp_u64 (c, "frame", got->frame, want->frame);
}

static void compare_node_status (struct cmp *c, const void *vgot, const void *vwant)
{
  const convoy_NodeStatus *got = vgot, *want = vwant;
  cmp_str (c, "node_id", got->node_id, want->node_id);
  cmp_enum (c, "role", got->role, want->role);
  cmp_str (c, "host", got->host, want->host);
  cmp_f64 (c, "capacity", got->capacity, want->capacity);
  cmp_f64 (c, "load", got->load, want->load);
  uint32_t n = cmp_seq_len (c, "counters", got->counters._length, want->counters._length);
  for (uint32_t i = 0; i < n; i++)
  {
    const convoy_Counter *g = &got->counters._buffer[i], *w = &want->counters._buffer[i];
    char elem[PATH_LEN], p[PATH_LEN];
    index_path (elem, "counters", i);
    child_path (p, elem, "name"); cmp_str (c, p, g->name, w->name);
    child_path (p, elem, "value"); cmp_u64 (c, p, g->value, w->value);
  }
}

static void compare_sensor_assignment (struct cmp *c, const void *vgot, const void *vwant)
{
  const convoy_SensorAssignment *got = vgot, *want = vwant;
  cmp_str (c, "agent_id", got->agent_id, want->agent_id);
  cmp_str (c, "sensor_id", got->sensor_id, want->sensor_id);
  cmp_str (c, "node_id", got->node_id, want->node_id);
  cmp_u64 (c, "epoch", got->epoch, want->epoch);
  cmp_f64 (c, "load", got->load, want->load);
}

static void compare_image (struct cmp *c, const void *vgot, const void *vwant)
{
  const convoy_Image *got = vgot, *want = vwant;
  cmp_header (c, "header", &got->header, &want->header);
  cmp_u64 (c, "width", got->width, want->width);
  cmp_u64 (c, "height", got->height, want->height);
  cmp_str (c, "encoding", got->encoding, want->encoding);
  cmp_u64 (c, "step", got->step, want->step);
  cmp_octets (c, "data", &got->data, &want->data);
}

static void compare_point_cloud (struct cmp *c, const void *vgot, const void *vwant)
{
  const convoy_PointCloud *got = vgot, *want = vwant;
  cmp_header (c, "header", &got->header, &want->header);
  cmp_u64 (c, "point_count", got->point_count, want->point_count);
  cmp_u64 (c, "point_step", got->point_step, want->point_step);
  uint32_t n = cmp_seq_len (c, "fields", got->fields._length, want->fields._length);
  for (uint32_t i = 0; i < n; i++)
  {
    const convoy_PointField *g = &got->fields._buffer[i], *w = &want->fields._buffer[i];
    char elem[PATH_LEN], p[PATH_LEN];
    index_path (elem, "fields", i);
    child_path (p, elem, "name"); cmp_str (c, p, g->name, w->name);
    child_path (p, elem, "offset"); cmp_u64 (c, p, g->offset, w->offset);
    child_path (p, elem, "datatype"); cmp_enum (c, p, g->datatype, w->datatype);
  }
  cmp_octets (c, "data", &got->data, &want->data);
}

static void compare_gnss_fix (struct cmp *c, const void *vgot, const void *vwant)
{
  const convoy_GnssFix *got = vgot, *want = vwant;
  cmp_header (c, "header", &got->header, &want->header);
  cmp_f64 (c, "latitude", got->latitude, want->latitude);
  cmp_f64 (c, "longitude", got->longitude, want->longitude);
  cmp_f64 (c, "altitude", got->altitude, want->altitude);
  /* A fixed IDL array: a plain C array, no length on the wire. */
  for (uint32_t i = 0; i < COUNT_OF (got->position_covariance); i++)
  {
    char p[PATH_LEN];
    index_path (p, "position_covariance", i);
    cmp_f64 (c, p, got->position_covariance[i], want->position_covariance[i]);
  }
}

static void compare_world_request (struct cmp *c, const void *vgot, const void *vwant)
{
  const convoy_WorldRequest *got = vgot, *want = vwant;
  cmp_str (c, "request_id", got->request_id, want->request_id);
  cmp_str (c, "client", got->client, want->client);
  cmp_world_command (c, "command", &got->command, &want->command);
}

/* ==== the peer =============================================================================== */

static struct peer_type types[] = {
  { .name = "Tick", .desc = &convoy_Tick_desc, .canonical = &canon.tick, .compare = compare_tick },
  { .name = "AgentState", .desc = &convoy_AgentState_desc, .canonical = &canon.agent_state,
    .compare = compare_agent_state },
  { .name = "FrameDone", .desc = &convoy_FrameDone_desc, .canonical = &canon.frame_done,
    .compare = compare_frame_done },
  { .name = "NodeStatus", .desc = &convoy_NodeStatus_desc, .canonical = &canon.node_status,
    .compare = compare_node_status },
  { .name = "SensorAssignment", .desc = &convoy_SensorAssignment_desc,
    .canonical = &canon.sensor_assignment, .compare = compare_sensor_assignment },
  { .name = "Image", .desc = &convoy_Image_desc, .canonical = &canon.image, .compare = compare_image },
  { .name = "PointCloud", .desc = &convoy_PointCloud_desc, .canonical = &canon.point_cloud,
    .compare = compare_point_cloud },
  { .name = "GnssFix", .desc = &convoy_GnssFix_desc, .canonical = &canon.gnss_fix,
    .compare = compare_gnss_fix },
  { .name = "WorldRequest", .desc = &convoy_WorldRequest_desc, .canonical = &canon.world_request,
    .compare = compare_world_request },
};

#define N_TYPES COUNT_OF (types)

static void check_sample (struct peer_type *t, const void *got)
{
  struct cmp c = { .type = t, .equal = true };
  t->compare (&c, got, t->canonical);
  if (c.equal && !t->ok)
  {
    t->ok = true;
    printf ("OK %s\n", t->name);
  }
}

/* Takes everything the reader holds, with reader loans: the samples own strings and sequence
   buffers allocated by the deserializer, and dds_return_loan frees those. */
static void take_and_check (struct peer_type *t)
{
  void *samples[TAKE_BATCH];
  dds_sample_info_t infos[TAKE_BATCH];
  dds_return_t n;
  do
  {
    samples[0] = NULL; /* a NULL first entry asks dds_take to lend its own buffers */
    n = dds_take (t->reader, samples, infos, TAKE_BATCH, TAKE_BATCH);
    if (n < 0)
    {
      fprintf (stderr, "cyclone_peer: take %s: %s\n", t->name, dds_strretcode (n));
      return;
    }
    for (int32_t i = 0; i < n; i++)
      if (infos[i].valid_data)
        check_sample (t, samples[i]);
    if (n > 0)
      dds_return_loan (t->reader, samples, n);
  } while (n == TAKE_BATCH);
}

/* Names the QoS policies a Rust peer is likely to disagree on; others print as numbers. */
static const char *policy_name (uint32_t id)
{
  switch (id)
  {
    case DDS_DURABILITY_QOS_POLICY_ID: return "DURABILITY";
    case DDS_RELIABILITY_QOS_POLICY_ID: return "RELIABILITY";
    case DDS_DEADLINE_QOS_POLICY_ID: return "DEADLINE";
    case DDS_LIVELINESS_QOS_POLICY_ID: return "LIVELINESS";
    case DDS_OWNERSHIP_QOS_POLICY_ID: return "OWNERSHIP";
    case DDS_DESTINATIONORDER_QOS_POLICY_ID: return "DESTINATION_ORDER";
    case DDS_PRESENTATION_QOS_POLICY_ID: return "PRESENTATION";
    case DDS_TYPE_CONSISTENCY_ENFORCEMENT_QOS_POLICY_ID: return "TYPE_CONSISTENCY_ENFORCEMENT";
    case DDS_DATA_REPRESENTATION_QOS_POLICY_ID: return "DATA_REPRESENTATION";
    default: return "see dds_qos_policy_id_t";
  }
}

/* Discovery problems look like a silent TIMEOUT; these stderr lines tell "never matched" and
   "matched but QoS-incompatible" apart. */
static void report_status_changes (struct peer_type *t)
{
  dds_subscription_matched_status_t sub;
  dds_publication_matched_status_t pub;
  dds_requested_incompatible_qos_status_t rinc;
  dds_offered_incompatible_qos_status_t oinc;
  if (dds_get_subscription_matched_status (t->reader, &sub) == DDS_RETCODE_OK && sub.current_count_change != 0)
    fprintf (stderr, "cyclone_peer: %s%s reader matches %" PRIu32 " writer(s)\n", to_cyclone_prefix, t->name,
             sub.current_count);
  if (dds_get_publication_matched_status (t->writer, &pub) == DDS_RETCODE_OK && pub.current_count_change != 0)
    fprintf (stderr, "cyclone_peer: %s%s writer matches %" PRIu32 " reader(s)\n", from_cyclone_prefix, t->name,
             pub.current_count);
  if (dds_get_requested_incompatible_qos_status (t->reader, &rinc) == DDS_RETCODE_OK && rinc.total_count_change > 0)
    fprintf (stderr, "cyclone_peer: %s%s reader: incompatible writer QoS (policy %" PRIu32 " %s)\n",
             to_cyclone_prefix, t->name, rinc.last_policy_id, policy_name (rinc.last_policy_id));
  if (dds_get_offered_incompatible_qos_status (t->writer, &oinc) == DDS_RETCODE_OK && oinc.total_count_change > 0)
    fprintf (stderr, "cyclone_peer: %s%s writer: incompatible reader QoS (policy %" PRIu32 " %s)\n",
             from_cyclone_prefix, t->name, oinc.last_policy_id, policy_name (oinc.last_policy_id));
}

static bool all_types_ok (void)
{
  for (size_t i = 0; i < N_TYPES; i++)
    if (!types[i].ok)
      return false;
  return true;
}

static volatile sig_atomic_t stop_requested;

static void on_signal (int sig)
{
  (void) sig;
  stop_requested = 1;
}

static void die (const char *what, dds_return_t rc)
{
  fprintf (stderr, "cyclone_peer: %s: %s\n", what, dds_strretcode (rc));
  exit (1);
}

static dds_entity_t create_topic (dds_entity_t participant, const struct peer_type *t, const char *prefix)
{
  char name[128];
  snprintf (name, sizeof (name), "%s%s", prefix, t->name);
  dds_entity_t topic = dds_create_topic (participant, t->desc, name, NULL, NULL);
  if (topic < 0)
    die (name, topic);
  return topic;
}

static void create_endpoints (dds_entity_t participant)
{
  dds_qos_t *qos = dds_create_qos ();
  dds_qset_reliability (qos, DDS_RELIABILITY_RELIABLE, DDS_SECS (1));
  dds_qset_durability (qos, DDS_DURABILITY_VOLATILE);
  dds_qset_history (qos, DDS_HISTORY_KEEP_LAST, HISTORY_DEPTH);
  /* The contract is plain CDR (XCDR1) only. Offering and accepting just that makes a peer
     that insists on XCDR2 show up as an incompatible-QoS diagnostic, not as odd data. */
  dds_data_representation_id_t xcdr1 = DDS_DATA_REPRESENTATION_XCDR1;
  dds_qset_data_representation (qos, 1, &xcdr1);

  for (size_t i = 0; i < N_TYPES; i++)
  {
    struct peer_type *t = &types[i];
    t->reader = dds_create_reader (participant, create_topic (participant, t, to_cyclone_prefix), qos, NULL);
    if (t->reader < 0)
      die ("create reader", t->reader);
    t->writer = dds_create_writer (participant, create_topic (participant, t, from_cyclone_prefix), qos, NULL);
    if (t->writer < 0)
      die ("create writer", t->writer);
  }
  dds_delete_qos (qos);
}

/* The write-only mode (see the top of the file). */
static int write_only (dds_entity_t participant, double timeout_s, int n, char **specs)
{
  dds_qos_t *qos = dds_create_qos ();
  dds_qset_reliability (qos, DDS_RELIABILITY_RELIABLE, DDS_SECS (1));
  dds_qset_durability (qos, DDS_DURABILITY_TRANSIENT_LOCAL);
  dds_qset_history (qos, DDS_HISTORY_KEEP_LAST, HISTORY_DEPTH);
  dds_data_representation_id_t xcdr1 = DDS_DATA_REPRESENTATION_XCDR1;
  dds_qset_data_representation (qos, 1, &xcdr1);

  dds_entity_t writers[16];
  const struct peer_type *written[16];
  const char *topics[16];
  uint32_t matched[16] = { 0 };
  if (n > 16)
    n = 16;
  for (int i = 0; i < n; i++)
  {
    char *eq = strchr (specs[i], '=');
    if (eq == NULL)
    {
      fprintf (stderr, "cyclone_peer: write: '%s' is not TYPE=TOPIC\n", specs[i]);
      return 1;
    }
    *eq = '\0';
    topics[i] = eq + 1;
    written[i] = NULL;
    for (size_t t = 0; t < N_TYPES; t++)
      if (strcmp (types[t].name, specs[i]) == 0)
        written[i] = &types[t];
    if (written[i] == NULL)
    {
      fprintf (stderr, "cyclone_peer: write: unknown type '%s'\n", specs[i]);
      return 1;
    }
    dds_entity_t topic = dds_create_topic (participant, written[i]->desc, topics[i], NULL, NULL);
    if (topic < 0)
    {
      fprintf (stderr, "cyclone_peer: topic %s: %s\n", topics[i], dds_strretcode (topic));
      return 1;
    }
    writers[i] = dds_create_writer (participant, topic, qos, NULL);
    if (writers[i] < 0)
    {
      fprintf (stderr, "cyclone_peer: writer %s: %s\n", topics[i], dds_strretcode (writers[i]));
      return 1;
    }
    printf ("WRITER %s\n", topics[i]);
  }
  dds_delete_qos (qos);

  const dds_time_t deadline = dds_time () + (dds_duration_t) (timeout_s * 1e9);
  while (!stop_requested && dds_time () < deadline)
  {
    for (int i = 0; i < n; i++)
    {
      dds_write (writers[i], written[i]->canonical);
      dds_publication_matched_status_t pub;
      if (dds_get_publication_matched_status (writers[i], &pub) == DDS_RETCODE_OK &&
          pub.current_count != matched[i])
      {
        matched[i] = pub.current_count;
        printf ("MATCHED %s %" PRIu32 "\n", topics[i], matched[i]);
      }
    }
    dds_sleepfor (PERIOD);
  }
  dds_delete (participant);
  return 0;
}

static void usage (void)
{
  fprintf (stderr, "usage: cyclone_peer DOMAIN_ID TIMEOUT_SECONDS [TO_PREFIX FROM_PREFIX]\n"
                   "       cyclone_peer DOMAIN_ID TIMEOUT_SECONDS write TYPE=TOPIC [TYPE=TOPIC ...]\n");
  exit (1);
}

int main (int argc, char **argv)
{
  bool write_mode = argc >= 5 && strcmp (argv[3], "write") == 0;
  if (argc != 3 && argc != 5 && !write_mode)
    usage ();
  if (argc == 5 && !write_mode)
  {
    to_cyclone_prefix = argv[3];
    from_cyclone_prefix = argv[4];
  }
  char *end;
  long domain = strtol (argv[1], &end, 10);
  if (*argv[1] == '\0' || *end != '\0' || domain < 0 || domain > 230)
    usage ();
  double timeout_s = strtod (argv[2], &end);
  if (*argv[2] == '\0' || *end != '\0' || !(timeout_s > 0))
    usage ();

  /* The Rust test reads stdout through a pipe and reacts to each line as it comes. */
  setvbuf (stdout, NULL, _IOLBF, 0);

  struct sigaction sa;
  memset (&sa, 0, sizeof (sa));
  sa.sa_handler = on_signal;
  sigemptyset (&sa.sa_mask);
  sigaction (SIGTERM, &sa, NULL);
  sigaction (SIGINT, &sa, NULL);

  build_canonical_samples ();

  dds_entity_t participant = dds_create_participant ((dds_domainid_t) domain, NULL, NULL);
  if (participant < 0)
    die ("create participant", participant);
  if (write_mode)
    return write_only (participant, timeout_s, argc - 4, argv + 4);
  create_endpoints (participant);

  const dds_time_t deadline = dds_time () + (dds_duration_t) (timeout_s * 1e9);
  bool all_ok = false;
  while (!stop_requested && dds_time () < deadline)
  {
    for (size_t i = 0; i < N_TYPES; i++)
    {
      struct peer_type *t = &types[i];
      /* Keep writing after ALL OK: the Rust side may still be waiting for our samples. */
      dds_return_t rc = dds_write (t->writer, t->canonical);
      if (rc != DDS_RETCODE_OK && !t->write_failed)
      {
        t->write_failed = true;
        fprintf (stderr, "cyclone_peer: write %s: %s\n", t->name, dds_strretcode (rc));
      }
      take_and_check (t);
      report_status_changes (t);
    }
    if (!all_ok && all_types_ok ())
    {
      all_ok = true;
      printf ("ALL OK\n");
    }
    dds_sleepfor (PERIOD);
  }

  if (stop_requested)
    fprintf (stderr, "cyclone_peer: stopped by signal%s\n", all_ok ? "" : " before ALL OK");
  else if (!all_ok)
  {
    printf ("TIMEOUT missing:");
    for (size_t i = 0; i < N_TYPES; i++)
      if (!types[i].ok)
        printf (" %s", types[i].name);
    printf ("\n");
  }

  dds_delete (participant);
  for (size_t i = 0; i < N_TYPES; i++)
    for (size_t j = 0; j < types[i].n_reported; j++)
      free (types[i].reported[j]);

  if (any_mismatch)
    return 3;
  return all_ok ? 0 : 1;
}
