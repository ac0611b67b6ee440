/* The raw consume baseline for bench/redis_streams.sh: a lean hiredis consumer-group loop.
   Reads COUNT entries at a time with XREADGROUP ... COUNT BATCH STREAMS stream > and acks the ids
   it just read with one XACK, until TOTAL entries were consumed (or the stream is drained).
     mode "seq":  read, ack, read, ack ... (one round trip each)
     mode "pipe": the XACK of batch N and the XREADGROUP of batch N+1 go out in one write
                  (what BuzzKitRedis' StreamConsumer does), so one round trip per batch.
   Each entry's fields are walked (lengths summed) so the reply is at least looked at.
   Usage: redis_consume HOST PORT STREAM GROUP TOTAL BATCH [seq|pipe]
   Prints: consume_rate <entries/s>  and  consumed <n> bytes <sum>. */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The entries array of an XREADGROUP reply ([[stream, [[id, [f, v...]], ...]]]), or NULL. */
static redisReply *entries_of(redisReply *reply) {
  if (reply == NULL || reply->type != REDIS_REPLY_ARRAY || reply->elements < 1) return NULL;
  redisReply *stream = reply->element[0];
  if (stream->type != REDIS_REPLY_ARRAY || stream->elements != 2) return NULL;
  return stream->element[1];
}

static void die(redisContext *c, const char *what) {
  fprintf(stderr, "redis_consume: %s: %s\n", what, c->err ? c->errstr : "unexpected reply");
  exit(1);
}

static const char **argv_buf;
static size_t *len_buf;

/* Appends XACK stream group <ids of entries>; returns the number of ids (0: nothing appended). */
static size_t append_ack(redisContext *c, const char *stream, const char *group, redisReply *entries) {
  if (entries == NULL || entries->elements == 0) return 0;
  size_t n = 0;
  argv_buf[n] = "XACK"; len_buf[n++] = 4;
  argv_buf[n] = stream; len_buf[n++] = strlen(stream);
  argv_buf[n] = group; len_buf[n++] = strlen(group);
  for (size_t i = 0; i < entries->elements; i++) {
    redisReply *id = entries->element[i]->element[0];
    argv_buf[n] = id->str; len_buf[n++] = id->len;
  }
  if (redisAppendCommandArgv(c, (int)n, argv_buf, len_buf) != REDIS_OK) die(c, "append XACK");
  return entries->elements;
}

static unsigned long long touch(redisReply *entries) {
  unsigned long long sum = 0;
  for (size_t i = 0; i < entries->elements; i++) {
    redisReply *fields = entries->element[i]->element[1];
    if (fields->type != REDIS_REPLY_ARRAY) continue;
    for (size_t j = 0; j < fields->elements; j++) sum += fields->element[j]->len;
  }
  return sum;
}

int main(int argc, char **argv) {
  if (argc < 7) {
    fprintf(stderr, "usage: redis_consume HOST PORT STREAM GROUP TOTAL BATCH [seq|pipe]\n");
    return 2;
  }
  const char *host = argv[1], *stream = argv[3], *group = argv[4];
  int port = atoi(argv[2]);
  long total = atol(argv[5]);
  long batch = atol(argv[6]);
  int pipe = argc > 7 && strcmp(argv[7], "pipe") == 0;
  char count_text[32];
  snprintf(count_text, sizeof count_text, "%ld", batch);
  argv_buf = malloc(sizeof(char *) * (size_t)(batch + 3));
  len_buf = malloc(sizeof(size_t) * (size_t)(batch + 3));

  redisContext *c = redisConnect(host, port);
  if (c == NULL || c->err) die(c, "connect");
  const char *create[] = {"XGROUP", "CREATE", stream, group, "0", "MKSTREAM"};
  redisReply *r = redisCommandArgv(c, 6, create, NULL);
  if (r == NULL) die(c, "XGROUP CREATE");
  freeReplyObject(r);

  const char *read_argv[] = {"XREADGROUP", "GROUP", group, "c1", "COUNT", count_text, "STREAMS", stream, ">"};
  long consumed = 0;
  unsigned long long bytes = 0;
  redisReply *previous = NULL;  /* pipe mode: the batch whose ack goes out with the next read */
  double start = now_seconds();
  while (consumed < total) {
    size_t acked = pipe ? append_ack(c, stream, group, entries_of(previous)) : 0;
    if (redisAppendCommandArgv(c, 9, read_argv, NULL) != REDIS_OK) die(c, "append XREADGROUP");
    if (acked) {
      if (redisGetReply(c, (void **)&r) != REDIS_OK || r->type != REDIS_REPLY_INTEGER) die(c, "XACK");
      freeReplyObject(r);
    }
    if (previous) freeReplyObject(previous);
    previous = NULL;
    if (redisGetReply(c, (void **)&r) != REDIS_OK) die(c, "XREADGROUP");
    redisReply *entries = entries_of(r);
    if (entries == NULL || entries->elements == 0) { freeReplyObject(r); break; }  /* drained */
    bytes += touch(entries);
    consumed += (long)entries->elements;
    if (pipe) {
      previous = r;
    } else {
      append_ack(c, stream, group, entries);
      freeReplyObject(r);
      if (redisGetReply(c, (void **)&r) != REDIS_OK || r->type != REDIS_REPLY_INTEGER) die(c, "XACK");
      freeReplyObject(r);
    }
  }
  if (previous) {
    if (append_ack(c, stream, group, entries_of(previous))) {
      if (redisGetReply(c, (void **)&r) != REDIS_OK) die(c, "XACK");
      freeReplyObject(r);
    }
    freeReplyObject(previous);
  }
  double seconds = now_seconds() - start;
  printf("consume_rate %.0f\nconsumed %ld bytes %llu\n", consumed / seconds, consumed, bytes);
  redisFree(c);
  return 0;
}
