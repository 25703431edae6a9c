/* The floor under `convoy bench latency` on this host (docs/TRANSPORT.md, "Where a round trip
 * goes"): two processes bounce a 64-byte UDP datagram with nothing else in the way, no DDS,
 * no parsing. Each side blocks in recv() and answers with sendto() from a second socket, as
 * ddsperf's receive threads do.
 *
 *   cc -O2 -o /tmp/udp_pingpong scripts/udp_pingpong.c
 *   /tmp/udp_pingpong PING_CPU PONG_CPU ADDRESS     (a CPU of -1 leaves that side unpinned)
 *   /tmp/udp_pingpong 0 0 127.0.0.1                 both on one CPU
 *   /tmp/udp_pingpong 0 1 127.0.0.1                 every wake-up crosses CPUs
 *   /tmp/udp_pingpong 0 1 192.0.2.2                 the same to this host's LAN address
 *
 * Prints the round trip's median and 90th percentile over 30,000 round trips, and the
 * median time spent inside the ping's sendto().
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { ROUND_TRIPS = 30000, SIZE = 64 };

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void pin(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) perror("sched_setaffinity");
}

static int bound_socket(const char *address, struct sockaddr_in *where) {
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  where->sin_family = AF_INET;
  where->sin_port = 0;
  if (inet_pton(AF_INET, address, &where->sin_addr) != 1) {
    fprintf(stderr, "not an IPv4 address: %s\n", address);
    exit(2);
  }
  socklen_t len = sizeof *where;
  if (s < 0 || bind(s, (struct sockaddr *)where, len) != 0 ||
      getsockname(s, (struct sockaddr *)where, &len) != 0) {
    perror("socket");
    exit(2);
  }
  return s;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s PING_CPU PONG_CPU ADDRESS\n", argv[0]);
    return 2;
  }
  int ping_cpu = atoi(argv[1]), pong_cpu = atoi(argv[2]);
  struct sockaddr_in ping_at, pong_at, unused;
  int ping_rx = bound_socket(argv[3], &ping_at), pong_rx = bound_socket(argv[3], &pong_at);
  int ping_tx = bound_socket(argv[3], &unused), pong_tx = bound_socket(argv[3], &unused);
  char buf[SIZE] = {0};

  pid_t pong = fork();
  if (pong == 0) {
    pin(pong_cpu);
    for (;;) {
      if (recv(pong_rx, buf, SIZE, 0) > 0)
        sendto(pong_tx, buf, SIZE, 0, (struct sockaddr *)&ping_at, sizeof ping_at);
    }
  }
  pin(ping_cpu);
  static double rtt[ROUND_TRIPS], in_send[ROUND_TRIPS];
  for (int i = 0; i < ROUND_TRIPS; i++) {
    double start = now_us();
    sendto(ping_tx, buf, SIZE, 0, (struct sockaddr *)&pong_at, sizeof pong_at);
    in_send[i] = now_us() - start;
    recv(ping_rx, buf, SIZE, 0);
    rtt[i] = now_us() - start;
  }
  kill(pong, SIGKILL);
  qsort(rtt, ROUND_TRIPS, sizeof rtt[0], by_value);
  qsort(in_send, ROUND_TRIPS, sizeof in_send[0], by_value);
  printf("cpus %d/%d to %s: round trip p50 %.1f us p90 %.1f us, sendto p50 %.1f us\n", ping_cpu,
         pong_cpu, argv[3], rtt[ROUND_TRIPS / 2], rtt[ROUND_TRIPS * 9 / 10],
         in_send[ROUND_TRIPS / 2]);
  return 0;
}
