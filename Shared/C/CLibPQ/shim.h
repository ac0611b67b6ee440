#ifndef BK_CLIBPQ_SHIM_H
#define BK_CLIBPQ_SHIM_H
#include <postgresql/libpq-fe.h>
#endif
