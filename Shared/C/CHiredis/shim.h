#ifndef BK_CHIREDIS_SHIM_H
#define BK_CHIREDIS_SHIM_H
#include <hiredis/hiredis.h>
#endif
