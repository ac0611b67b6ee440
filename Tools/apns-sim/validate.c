/*
 * The request rules of "Sending notification requests to APNs", in the order the simulator
 * applies them (first failure wins):
 *   :method POST (405 MethodNotAllowed) -> :path /3/device/<token> (404 BadPath,
 *   400 MissingDeviceToken for an empty token) -> provider token (403 Missing/Invalid/
 *   ExpiredProviderToken, 429 TooManyProviderTokenUpdates) -> repeated apns-* header
 *   (400 DuplicateHeaders) -> apns-id UUID (400 BadMessageId) -> device token: hex, 64+ digits
 *   (400 BadDeviceToken) -> apns-topic (400 MissingTopic) -> apns-push-type (400 InvalidPushType)
 *   -> topic suffix the push type needs (400 DeviceTokenNotForTopic) -> apns-priority
 *   (400 BadPriority) -> apns-expiration (400 BadExpirationDate) -> apns-collapse-id
 *   (400 BadCollapseId) -> payload (400 PayloadEmpty, 413 PayloadTooLarge, 400 BadMessage).
 *
 * Choices where Apple's documentation is silent or loose:
 *   - A missing apns-push-type is treated as "alert" (APNs still accepts it for iOS devices).
 *   - apns-priority accepts 1, 5 and 10 (Apple documents all three). The default is 10, except
 *     for background pushes whose default is 5; an explicit 10 on a background push is BadPriority.
 *   - Push types that need a topic suffix (liveactivity and pushtostart: ".push-type.liveactivity",
 *     voip: ".voip", complication: ".complication", fileprovider: ".pushkit.fileprovider") are
 *     answered 400 DeviceTokenNotForTopic without it: that is what APNs answers when a Live
 *     Activity token is pushed with the bare bundle id as topic.
 *   - A payload that is not a JSON object is 400 "BadMessage" (a simulator-only reason: APNs
 *     documents none for malformed JSON). The presence of "aps" is not enforced, as APNs does not.
 */
#include "sim.h"

#include <string.h>

#define PAYLOAD_LIMIT 4096
#define PAYLOAD_LIMIT_VOIP 5120
#define COLLAPSE_ID_LIMIT 64

static bool eq(const char *s, size_t n, const char *lit) {
    size_t l = strlen(lit);
    return n == l && memcmp(s, lit, l) == 0;
}

static bool ends_with(const char *s, size_t n, const char *suffix) {
    size_t l = strlen(suffix);
    return n > l && memcmp(s + n - l, suffix, l) == 0;
}

static void reject(verdict *v, int status, reason_id r) {
    v->status = status;
    v->reason = r;
}

static const char *required_suffix(const char *type, size_t n) {
    if (eq(type, n, "liveactivity") || eq(type, n, "pushtostart")) return ".push-type.liveactivity";
    if (eq(type, n, "voip")) return ".voip";
    if (eq(type, n, "complication")) return ".complication";
    if (eq(type, n, "fileprovider")) return ".pushkit.fileprovider";
    return NULL;
}

static bool known_push_type(const char *t, size_t n) {
    static const char *const types[] = {"alert", "background", "location", "voip", "complication",
                                        "fileprovider", "mdm", "liveactivity", "pushtostart"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (eq(t, n, types[i])) return true;
    return false;
}

void validate_request(request_view *r, token_cache *tc, int64_t now, verdict *v) {
    if (!eq(r->method, r->method_len, "POST")) { reject(v, 405, R_MethodNotAllowed); return; }

    static const char prefix[] = "/3/device/";
    const size_t plen = sizeof prefix - 1;
    if (r->path_len < plen || memcmp(r->path, prefix, plen) != 0) { reject(v, 404, R_BadPath); return; }
    r->token = r->path + plen;
    r->token_len = r->path_len - plen;
    const char *q = memchr(r->token, '?', r->token_len);
    if (q) r->token_len = (size_t)(q - r->token);
    if (r->token_len == 0) { reject(v, 400, R_MissingDeviceToken); return; }
    if (memchr(r->token, '/', r->token_len)) { reject(v, 404, R_BadPath); return; }

    jwt_check(tc, r->auth, r->auth_len, now, v);
    if (v->status) return;

    if (r->duplicate) { reject(v, 400, R_DuplicateHeaders); return; }
    if (r->apns_id && !is_uuid(r->apns_id, r->apns_id_len)) { reject(v, 400, R_BadMessageId); return; }
    if (r->token_len < 64 || !is_hex(r->token, r->token_len)) { reject(v, 400, R_BadDeviceToken); return; }
    if (!r->topic || r->topic_len == 0) { reject(v, 400, R_MissingTopic); return; }

    const char *type = r->push_type ? r->push_type : "alert";
    size_t type_len = r->push_type ? r->push_type_len : 5;
    if (!known_push_type(type, type_len)) { reject(v, 400, R_InvalidPushType); return; }
    const char *suffix = required_suffix(type, type_len);
    if (suffix && !ends_with(r->topic, r->topic_len, suffix)) { reject(v, 400, R_DeviceTokenNotForTopic); return; }

    bool background = eq(type, type_len, "background");
    if (r->priority) {
        if (eq(r->priority, r->priority_len, "10")) r->effective_priority = 10;
        else if (eq(r->priority, r->priority_len, "5")) r->effective_priority = 5;
        else if (eq(r->priority, r->priority_len, "1")) r->effective_priority = 1;
        else { reject(v, 400, R_BadPriority); return; }
        if (background && r->effective_priority == 10) { reject(v, 400, R_BadPriority); return; }
    } else {
        r->effective_priority = background ? 5 : 10;
    }

    if (r->expiration) {
        if (r->expiration_len == 0 || r->expiration_len > 19) { reject(v, 400, R_BadExpirationDate); return; }
        for (size_t i = 0; i < r->expiration_len; i++)
            if (r->expiration[i] < '0' || r->expiration[i] > '9') { reject(v, 400, R_BadExpirationDate); return; }
    }
    if (r->collapse_id && r->collapse_id_len > COLLAPSE_ID_LIMIT) { reject(v, 400, R_BadCollapseId); return; }

    size_t limit = eq(type, type_len, "voip") ? PAYLOAD_LIMIT_VOIP : PAYLOAD_LIMIT;
    if (r->body_total == 0) { reject(v, 400, R_PayloadEmpty); return; }
    if (r->body_total > limit) { reject(v, 413, R_PayloadTooLarge); return; }
    if (json_check(r->body, r->body_len) != JSON_OBJECT) { reject(v, 400, R_BadMessage); return; }
}
